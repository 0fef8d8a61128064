// Audit: every deletion, import, supersession and merge, newest first.
import { get } from "../lib/api.js";
import { badge, cut, empty, enc, h, page, short } from "../lib/dom.js";

// Names of the records the page has heard of (the feed's items and removals).
function known(feed) {
  const names = new Map();
  for (const i of feed) {
    if (i.kind !== "removed") names.set(i.id, i.title);
    for (const r of i.removed || []) if (r.title) names.set(r.id, r.title);
  }
  return names;
}

function target(id, names) {
  const name = names.get(id);
  const text = name ? cut(name, 70) : id;
  const attrs = { text, title: id, "data-target": id };
  if (id.startsWith("mem_")) return h("a", { href: `#memories/${enc(id)}`, ...attrs });
  if (id.startsWith("obs_")) return h("span", attrs);
  return h("a", { href: `#sessions/${enc(id)}`, ...attrs });
}

function row(e, names) {
  return h("tr", { "data-audit": e.id },
    h("td", {}, h("time", { datetime: e.at, text: short(e.at) })), h("td", {}, badge(e.action)),
    h("td", {}, (e.targetIds || []).slice(0, 8).flatMap((t, i) => [i ? ", " : "", target(t, names)]),
      e.targetIds && e.targetIds.length > 8 ? ` and ${e.targetIds.length - 8} more` : ""),
    h("td", { text: e.reason || "—" }),
    e.actor ? h("td", { text: e.actor }) : h("td", { class: "muted", text: "not recorded" }),
    h("td", { text: e.project || "—" }));
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
  const names = known(ctx.live.feed || []);
  body.replaceChildren(...entries.map((e) => row(e, names)));
  // Memories the feed did not name (older ones): their titles, for the first rows shown.
  const missing = [...new Set(entries.slice(0, 40).flatMap((e) => e.targetIds || []))]
    .filter((id) => id.startsWith("mem_") && !names.has(id)).slice(0, 30);
  for (const id of missing) {
    get(`memories/${enc(id)}`).then(({ memory: m }) => {
      for (const el of body.querySelectorAll(`[data-target="${CSS.escape(id)}"]`)) el.textContent = cut(m.title || m.content, 70);
    }, () => {});
  }
  none.hidden = entries.length > 0;
  table.hidden = entries.length === 0;
  ctx.on("kv:audit", (msg) => {
    if (msg.op !== "put" || !msg.value) return;
    body.prepend(row(msg.value, known(ctx.live.feed || [])));
    none.hidden = true;
    table.hidden = false;
  });
}
