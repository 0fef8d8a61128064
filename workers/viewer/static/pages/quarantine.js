// Quarantine: the records kept out of every agent's context (the write check's suspicion, a
// hold by hand, or a chain from a held record), each with why, where it came from and its
// text, shown as text only: these are the records most likely written to fool a reader.
import { post, get, query } from "../lib/api.js";
import { confirmWithReason } from "../lib/confirm.js";
import { badge, empty, field, h, page, toast, when } from "../lib/dom.js";

const REASONS = {
  "ignore-previous": "tells the agent to ignore its instructions",
  "instruction-to-ai": "gives the agent orders",
  "override-policy": "claims a new policy or mode",
  "tell-the-user": "scripts what to tell the user",
  "claims-consent": "claims the user agreed",
  exfiltration: "sends secrets or files somewhere",
  "role-marker": "forges a chat role or system block",
  "html-comment-instruction": "hides orders in an HTML comment",
  "hidden-characters": "carried invisible characters",
  manual: "held by hand",
  chain: "derived from a held record",
};

function reasonBadges(reasons) {
  return (reasons || []).map((r) => {
    const b = badge(r, "bad reason");
    b.title = REASONS[r] || "";
    return b;
  });
}

function decide(action, rec, reload) {
  const release = action === "release";
  return async () => {
    const ok = await confirmWithReason(
      release ? `Release "${rec.title || rec.id}"?` : `Hold "${rec.title || rec.id}"?`,
      release ? "It flows into agents' context, search and the lifecycle again (with what its hold held). The audit log keeps who released it and why."
        : "It is kept out of every agent's context, with what was derived from it. The audit log keeps who held it and why.",
      release ? "Release" : "Hold");
    if (!ok) return;
    try {
      const r = await post(`quarantine/${action}`, { id: rec.id, reason: ok.reason, agentId: "viewer" });
      toast(release ? `released (${r.releasedNow.length} record${r.releasedNow.length === 1 ? "" : "s"})`
        : `held (${r.heldNow.length} record${r.heldNow.length === 1 ? "" : "s"})`, "ok");
      await reload();
    } catch (e) { toast(e.message, "err"); }
  };
}

function item(rec, reload) {
  const prov = Object.entries(rec.provenance || {}).map(([k, v]) => `${k}: ${v}`).join(" · ");
  const d = rec.decision;
  return h("li", { class: "quarantined", "data-record": rec.id, "data-held": rec.held ? "true" : "false" },
    h("h3", { class: "title", text: rec.title || rec.id }),
    h("p", {}, badge(rec.kind, `kind-${rec.kind}`), rec.held ? badge("held", "bad") : badge("released", "ok"),
      ...reasonBadges(rec.reasons), rec.source ? badge(`source: ${rec.source}`, "origin") : null),
    h("p", { class: "muted" }, `${rec.project || "no project"} · written ${when(rec.timestamp)}`, prov ? ` · ${prov}` : ""),
    d ? h("p", { class: "muted decision" },
      `${d.state === "held" ? "Held" : "Released"} by ${d.by || "the owner"} ${when(d.at)}`, d.reason ? `: ${d.reason}` : "") : null,
    rec.chain && rec.chain.length ? h("p", { class: "muted" }, `Held with: ${rec.chain.join(", ")}`) : null,
    rec.derived && rec.derived.length ? h("p", { class: "muted" }, `Its hold holds ${rec.derived.length} derived record(s): ${rec.derived.slice(0, 5).join(", ")}`) : null,
    // The record's words as text, never markup: these are the ones written to fool a reader.
    h("pre", { class: "excerpt", text: rec.excerpt || "" }),
    h("div", { class: "row" }, rec.held
      ? h("button", { type: "button", class: "release", text: "Release", onclick: decide("release", rec, reload) })
      : h("button", { type: "button", class: "hold danger", text: "Hold", onclick: decide("hold", rec, reload) })));
}

export async function render(ctx) {
  const project = h("input", { id: "quarantine-project", type: "search", value: ctx.params.get("project") || "", placeholder: "all projects" });
  const released = h("input", { id: "quarantine-released", type: "checkbox" });
  const holdId = h("input", { id: "quarantine-hold-id", placeholder: "obs_… mem_… lsn_… summary:…", autocomplete: "off" });
  const list = h("ol", { id: "quarantine-list", class: "plain quarantine" });
  const total = h("p", { id: "quarantine-total", class: "muted", role: "status" });
  const none = empty("quarantine-empty", "Nothing is held",
    "Records whose words try to instruct the agent (orders to an AI, forged system blocks, hidden characters) are held here when they are written, out of every agent's context until you release them. Hold any record by hand with its id above, or:",
    "curl -X POST localhost:3111/agentmemory/quarantine/hold -H \"Authorization: Bearer $AGENTMEMORY_SECRET\" -d '{\"id\": \"obs_…\"}'");
  const load = async (ev) => {
    if (ev) ev.preventDefault();
    try {
      const r = await get(`quarantine${query({ project: project.value.trim(), includeReleased: released.checked ? "true" : "", limit: 200 })}`);
      list.replaceChildren(...r.records.map((rec) => item(rec, load)));
      total.textContent = `${r.total} held`;
      none.hidden = r.records.length > 0;
      list.hidden = r.records.length === 0;
    } catch (e) { toast(e.message, "err"); }
  };
  const hold = async (ev) => {
    ev.preventDefault();
    const id = holdId.value.trim();
    if (!id) return;
    await decide("hold", { id, title: id }, load)();
    holdId.value = "";
  };
  released.addEventListener("change", () => load());
  page("Quarantine", "Records kept out of every agent's context: why, where they came from, and their text. Release what is safe; hold what is not.",
    h("form", { class: "filters", role: "search", onsubmit: load }, field("Project", project),
      h("div", { class: "field" }, h("label", { for: "quarantine-released", text: "Show released" }), released),
      h("div", { class: "row" }, h("button", { type: "submit", id: "quarantine-filter", text: "Show" }))),
    h("form", { class: "filters", id: "quarantine-hold-form", onsubmit: hold }, field("Hold a record by id", holdId),
      h("div", { class: "row" }, h("button", { type: "submit", id: "quarantine-hold", class: "danger", text: "Hold" }))),
    total, none, list);
  await load();
  let again = null;
  ctx.on("event", () => { clearTimeout(again); again = setTimeout(() => load(), 500); });
  ctx.on("kv:audit", () => { clearTimeout(again); again = setTimeout(() => load(), 300); });
}
