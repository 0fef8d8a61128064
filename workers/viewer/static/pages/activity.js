// Activity: what memory took in, newest first, as it happens.
import { badge, cut, empty, enc, h, page, select, when } from "../lib/dom.js";

const LABELS = { observation: "observation", memory: "memory", summary: "summary", removed: "removed" };
const MAX_ITEMS = 500;

export function itemLink(item) {
  if (item.kind === "observation") return `#sessions/${enc(item.sessionId)}?obs=${enc(item.id)}`;
  if (item.kind === "memory") return `#memories/${enc(item.id)}`;
  if (item.kind === "summary") return `#sessions/${enc(item.sessionId)}`;
  return "#audit";
}

function row(item, fresh) {
  return h("li", { class: `activity-item kind-${item.kind}${fresh ? " fresh" : ""}`, "data-id": item.id,
    "data-kind": item.kind, "data-seq": item.seq },
    h("time", { datetime: item.at || "", text: item.at ? when(item.at) : "—" }),
    badge(LABELS[item.kind] || item.kind, `kind-${item.kind}`),
    item.type ? badge(item.type, "type") : null,
    item.origin === "import" ? badge("imported", "origin") : null,
    h("a", { class: "title", href: itemLink(item), text: item.title || item.id }),
    item.project ? h("span", { class: "muted project", text: item.project }) : null,
    item.detail ? h("p", { class: "detail", text: cut(item.detail, 240) }) : null);
}

export async function render(ctx) {
  const snap = ctx.live.snapshot;
  const filter = select("activity-kind", [["", "everything"], ["observation", "observations"],
    ["memory", "memories"], ["summary", "summaries"], ["removed", "removals"]], ctx.params.get("kind") || "");
  const list = h("ol", { id: "activity-feed", class: "feed", "aria-label": "Newest first" });
  const announce = h("p", { id: "activity-new", class: "sr-only", "aria-live": "polite" });
  const emptyBox = empty("activity-empty", "Nothing has happened yet",
    "Observations arrive when an agent's hooks post what it did; memories when it saves one. " +
    "Connect an agent, or load three sample sessions:",
    "agentmemory connect claude-code --with-hooks\nagentmemory demo");
  const shows = (item) => !filter.value || item.kind === filter.value;
  const items = (snap ? snap.activity : []).slice();
  const draw = () => {
    list.replaceChildren(...items.filter(shows).map((i) => row(i, false)));
    emptyBox.hidden = items.length > 0;
    list.hidden = items.length === 0;
  };
  filter.addEventListener("change", () => {
    history.replaceState(null, "", filter.value ? `#activity?kind=${filter.value}` : "#activity");
    draw();
  });
  page("Activity", "What memory took in, newest first, live.",
    h("div", { class: "row" }, h("label", { for: "activity-kind", text: "Show" }), filter),
    announce, emptyBox, list);
  draw();
  let fresh = 0;
  ctx.on("event", (item) => {
    items.unshift(item);
    if (items.length > MAX_ITEMS) items.pop();
    if (item.kind === "removed") {
      for (const id of item.ids || []) {
        const el = list.querySelector(`li[data-id="${CSS.escape(id)}"]`);
        if (el) el.classList.add("gone");
      }
    }
    emptyBox.hidden = true;
    list.hidden = false;
    if (shows(item)) list.prepend(row(item, true));
    while (list.children.length > MAX_ITEMS) list.lastChild.remove();
    fresh++;
    clearTimeout(announce.timer);
    announce.timer = setTimeout(() => { announce.textContent = `${fresh} new`; fresh = 0; }, 1500);
  });
}
