// Activity: what memory took in, newest first, live. The feed is the page's (lib/live.js
// keeps it across page changes and fills it from the snapshot, every live event and older
// pages asked for); times are one clock, when memory took each event in, so they run in
// order; versions of one memory fold into their newest; removals say what they removed.
import { badge, cut, empty, enc, h, page, select, when } from "../lib/dom.js";

const LABELS = { observation: "observation", memory: "memory", summary: "summary", removed: "removed" };

export function itemLink(item) {
  if (item.kind === "observation") return `#sessions/${enc(item.sessionId)}?obs=${enc(item.id)}`;
  if (item.kind === "memory") return `#memories/${enc(item.id)}`;
  if (item.kind === "summary") return `#sessions/${enc(item.sessionId)}`;
  return "#audit";
}

// Newest first in, rows out: a memory's older versions (and the removals that replaced
// them) fold into the row of its newest version present.
export function fold(items) {
  const byId = new Map();
  for (const i of items) if (i.kind === "memory" && !byId.has(i.id)) byId.set(i.id, i);
  const folded = new Set();
  const older = new Map();
  for (const i of items) {
    if (i.kind !== "memory" || folded.has(i.id)) continue;
    const chain = [];
    let cur = i;
    while (cur.supersedes && byId.has(cur.supersedes) && !folded.has(cur.supersedes)) {
      cur = byId.get(cur.supersedes);
      folded.add(cur.id);
      chain.push(cur);
    }
    if (chain.length) older.set(i.id, chain);
  }
  const rows = items.filter((i) => {
    if (i.kind === "memory") return !folded.has(i.id);
    if (i.kind === "removed" && i.action === "superseded") return !(i.ids || []).every((id) => folded.has(id));
    return true;
  });
  return { rows, older };
}

function versions(item, chain) {
  return h("details", { class: "versions-folded" },
    h("summary", {}, badge(`v${item.version || chain.length + 1}`, "ok"), ` ${chain.length} earlier version${chain.length === 1 ? "" : "s"}`),
    h("ul", { class: "plain" }, chain.map((v) => h("li", {},
      h("a", { href: `#memories/${enc(v.id)}`, text: `v${v.version || 1}` }),
      h("span", { class: "muted", text: ` ${when(v.at)} · ${cut(v.detail || v.title, 90)}` })))));
}

function row(item, chain, fresh) {
  return h("li", { class: `activity-item kind-${item.kind}${fresh ? " fresh" : ""}`, "data-id": item.id,
    "data-kind": item.kind, "data-seq": item.seq, "data-versions": chain ? chain.length + 1 : null },
    h("time", { datetime: item.at || "", text: item.at ? when(item.at) : "—" }),
    h("div", { class: "activity-body" },
      h("div", { class: "activity-head" },
        badge(LABELS[item.kind] || item.kind, `kind-${item.kind}`),
        item.type ? badge(item.type, "type") : null,
        item.origin === "import" ? badge("imported", "origin") : null,
        item.instance ? badge(`from ${item.instance}`, "origin") : null,
        h("a", { class: "title", href: itemLink(item), text: item.title || item.id }),
        item.project ? h("span", { class: "muted project", text: item.project }) : null),
      item.happened ? h("p", { class: "muted happened", text: `happened ${when(item.happened)}` }) : null,
      item.detail ? h("p", { class: "detail", text: cut(item.detail, 240) }) : null,
      chain ? versions(item, chain) : null));
}

export async function render(ctx) {
  const live = ctx.live;
  const filter = select("activity-kind", [["", "everything"], ["observation", "observations"],
    ["memory", "memories"], ["summary", "summaries"], ["removed", "removals"]], ctx.params.get("kind") || "");
  const list = h("ol", { id: "activity-feed", class: "feed", "aria-label": "Newest first" });
  const announce = h("p", { id: "activity-new", class: "sr-only", "aria-live": "polite" });
  const older = h("button", { id: "activity-older", type: "button", class: "secondary", text: "Show older" });
  const emptyBox = empty("activity-empty", "Nothing has happened yet",
    "Observations arrive when an agent's hooks post what it did; memories when it saves one. " +
    "Connect an agent, or load three sample sessions:",
    "agentmemory connect claude-code --with-hooks\nagentmemory demo");
  const shows = (item) => !filter.value || item.kind === filter.value;
  const fresh = new Set();
  const draw = () => {
    const items = live.feed.filter(shows);
    const { rows, older: chains } = fold(items);
    list.replaceChildren(...rows.map((i) => row(i, chains.get(i.id), fresh.has(i.seq))));
    emptyBox.hidden = live.feed.length > 0;
    list.hidden = live.feed.length === 0;
    older.hidden = !live.more || live.feed.length === 0;
    fresh.clear();
  };
  filter.addEventListener("change", () => {
    history.replaceState(null, "", filter.value ? `#activity?kind=${filter.value}` : "#activity");
    draw();
  });
  older.addEventListener("click", async () => {
    older.disabled = true;
    try {
      const n = await live.older();
      announce.textContent = n ? `${n} older events` : "no older events";
    } finally { older.disabled = false; }
    draw();
  });
  page("Activity", "What memory took in, newest first, live; times are when it arrived.",
    h("div", { class: "row" }, h("label", { for: "activity-kind", text: "Show" }), filter),
    announce, emptyBox, list, h("div", { class: "row" }, older));
  draw();
  let count = 0;
  ctx.on("event", (item) => {
    fresh.add(item.seq);
    draw();
    count++;
    clearTimeout(announce.timer);
    announce.timer = setTimeout(() => { announce.textContent = `${count} new`; count = 0; }, 1500);
  });
  ctx.on("snapshot", draw);
}
