// Audit: every deletion, import, supersession and merge, newest first.
import { get } from "../lib/api.js";
import { badge, empty, enc, h, page, short, when } from "../lib/dom.js";

function target(id) {
  if (id.startsWith("mem_")) return h("a", { href: `#memories/${enc(id)}`, text: id });
  if (id.startsWith("obs_")) return h("span", { text: id });
  return h("a", { href: `#sessions/${enc(id)}`, text: id });
}

function row(e) {
  return h("tr", { "data-audit": e.id },
    h("td", {}, h("time", { datetime: e.at, text: short(e.at) })), h("td", {}, badge(e.action)),
    h("td", {}, (e.targetIds || []).slice(0, 8).flatMap((t, i) => [i ? ", " : "", target(t)]),
      e.targetIds && e.targetIds.length > 8 ? ` and ${e.targetIds.length - 8} more` : ""),
    h("td", { text: e.reason || "—" }), h("td", { text: e.actor || "—" }), h("td", { text: e.project || "—" }));
}

export async function render(ctx) {
  const body = h("tbody");
  const table = h("table", { id: "audit-list" }, h("caption", { class: "sr-only", text: "Audit log" }),
    h("thead", {}, h("tr", {}, ["when", "action", "records", "reason", "by", "project"].map((c) => h("th", { scope: "col", text: c })))), body);
  const none = empty("audit-empty", "Nothing audited yet",
    "Every deletion, import, supersession and merge is recorded here, with who did it and why. Forgetting a memory adds one:",
    "agentmemory remember \"a test memory\"   # then forget it on the Memories page");
  page("Audit", "What was deleted, imported, merged or superseded, and why.", none, table);
  const { entries } = await get("audit?limit=300");
  body.replaceChildren(...entries.map(row));
  none.hidden = entries.length > 0;
  table.hidden = entries.length === 0;
  ctx.on("kv:audit", (msg) => {
    if (msg.op !== "put" || !msg.value) return;
    body.prepend(row(msg.value));
    none.hidden = true;
    table.hidden = false;
  });
}
