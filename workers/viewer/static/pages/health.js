// Health: the service's status checks, each with how to fix it; pushed when it changes.
import { get } from "../lib/api.js";
import { badge, h, page } from "../lib/dom.js";

function checks(health) {
  return h("table", { id: "health-checks" }, h("caption", { class: "sr-only", text: "Status checks" }),
    h("thead", {}, h("tr", {}, ["", "check", "detail", "how to fix"].map((c) => h("th", { scope: "col", text: c })))),
    h("tbody", {}, health.checks.map((c) => h("tr", { "data-check": c.name, class: c.ok ? "ok-row" : "bad-row" },
      h("td", {}, badge(c.ok ? "ok" : "failing", c.ok ? "ok" : "bad")), h("td", { text: c.name }),
      h("td", { text: c.detail }), h("td", { text: c.fix || "—" })))));
}

export async function render(ctx) {
  const box = h("div", { id: "health" });
  const index = h("div", { id: "health-index" });
  page("Health", "What is wrong and how to fix it. Updated when it changes.", box, h("h2", { text: "Search index" }), index);
  const show = (health) => {
    if (!health) return;
    box.replaceChildren(
      h("p", { id: "health-status" }, "Status: ", badge(health.status, health.status === "ok" ? "ok" : "bad")),
      checks(health));
  };
  show((ctx.live.snapshot || {}).health);
  ctx.on("health", show);
  get("status").then((doc) => show(doc), () => {});
  try {
    const [s, l] = await Promise.all([get("search/status"), get("livez")]);
    index.replaceChildren(h("p", {}, `${s.documents} documents · ${s.terms} terms · ${s.entities} entities · ${s.vectors} vectors · `,
      `lag ${s.lag} events · snapshot ${s.snapshotAgeSeconds == null ? "none yet" : `${Math.round(s.snapshotAgeSeconds)} s old`} · embeddings ${s.embedder}`),
      h("p", { class: "muted", text: `REST ${location.hostname} · streams port ${l.streamsPort} · viewer port ${l.viewerPort ?? "off"} · boot ${l.bootId}` }));
  } catch (e) {
    index.replaceChildren(h("p", { class: "err", text: `the search worker did not answer: ${e.message}` }));
  }
}
