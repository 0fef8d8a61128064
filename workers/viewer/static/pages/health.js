// Health: the service's status checks (the team's links among them), each with how to fix
// it, pushed when it changes; the team link per peer (what the round-trip probe last saw);
// the search index.
import { get } from "../lib/api.js";
import { badge, h, page } from "../lib/dom.js";

function checks(health) {
  return h("table", { id: "health-checks" }, h("caption", { class: "sr-only", text: "Status checks" }),
    h("thead", {}, h("tr", {}, ["", "check", "detail", "how to fix"].map((c) => h("th", { scope: "col", text: c })))),
    h("tbody", {}, health.checks.map((c) => h("tr", { "data-check": c.name, class: c.ok ? "ok-row" : "bad-row" },
      h("td", {}, badge(c.ok ? "ok" : "failing", c.ok ? "ok" : "bad")), h("td", { text: c.name }),
      h("td", { text: c.detail }), h("td", { text: c.fix || "—" })))));
}

const secs = (s) => (s === null || s === undefined ? "—" : s < 90 ? `${Math.round(s)} s ago` : `${Math.round(s / 60)} min ago`);

function peers(doc) {
  if (!doc.peers.length) {
    return h("p", { id: "team-peers", class: "muted", text: doc.self === "local"
      ? `Team ${doc.team}: this machine is not linked to others (it has no JetStream domain; docs/TEAM.md).`
      : `Team ${doc.team}: ${doc.self} has no peers yet (AGENTMEMORY_MESH_PEERS, or POST mesh/peers).` });
  }
  return h("table", { id: "team-peers" }, h("caption", { class: "sr-only", text: "Team links" }),
    h("thead", {}, h("tr", {}, ["peer", "link", "round trip", "last echo", "its probe reached us", "lag", "why not"]
      .map((c) => h("th", { scope: "col", text: c })))),
    h("tbody", {}, doc.peers.map((p) => h("tr", { "data-peer": p.name },
      h("td", {}, h("strong", { text: p.name })),
      h("td", {}, badge(p.status, p.status === "connected" ? "ok" : p.status === "syncing" ? "warn" : "bad")),
      h("td", {}, p.roundTripMs === null || p.roundTripMs === undefined ? badge("none", "bad") : badge(`${p.roundTripMs} ms`, "ok")),
      h("td", { text: secs(p.echoSeconds) }), h("td", { text: secs(p.heardSeconds) }),
      h("td", { text: String(p.lag) }), h("td", { text: p.reason || "—" })))));
}

export async function render(ctx) {
  const box = h("div", { id: "health" });
  const team = h("div", { id: "health-team" });
  const index = h("div", { id: "health-index" });
  page("Health", "What is wrong and how to fix it. Updated when it changes.", box,
    h("h2", { text: "Team" }), team, h("h2", { text: "Search index" }), index);
  const show = (health) => {
    if (!health) return;
    box.replaceChildren(
      h("p", { id: "health-status" }, "Status: ", badge(health.status, health.status === "ok" ? "ok" : "bad")),
      checks(health));
  };
  show((ctx.live.snapshot || {}).health);
  ctx.on("health", show);
  get("mesh/peers").then((doc) => { if (ctx.current()) team.replaceChildren(peers(doc)); },
    (e) => team.replaceChildren(h("p", { class: "err", text: `the team worker did not answer: ${e.message}` })));
  try {
    const [s, l] = await Promise.all([get("search/status"), get("livez")]);
    index.replaceChildren(h("p", {}, `${s.documents} documents · ${s.terms} terms · ${s.entities} entities · ${s.vectors} vectors · `,
      `lag ${s.lag} events · snapshot ${s.snapshotAgeSeconds == null ? "none yet" : `${Math.round(s.snapshotAgeSeconds)} s old`} · embeddings ${s.embedder}`),
      h("p", { class: "muted", text: `REST ${location.hostname} · streams port ${l.streamsPort} · viewer port ${l.viewerPort ?? "off"} · boot ${l.bootId}` }));
  } catch (e) {
    index.replaceChildren(h("p", { class: "err", text: `the search worker did not answer: ${e.message}` }));
  }
}
