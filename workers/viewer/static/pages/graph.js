// Graph: the entities memory extracted (files, symbols, packages, errors, commands,
// concepts), searched by name; a node's neighbours and where it was seen.
import { get, post } from "../lib/api.js";
import { badge, empty, enc, field, h, page, select, toast, short, when } from "../lib/dom.js";

const TYPES = ["file", "symbol", "package", "error", "command", "concept"];

function stats(s) {
  const by = (o) => Object.entries(o || {}).map(([k, v]) => `${k} ${v}`).join(" · ") || "none";
  return h("div", { id: "graph-stats", class: "cards" },
    h("div", { class: "card" }, h("strong", { text: String(s.totalNodes) }), " nodes", h("p", { class: "muted", text: by(s.nodesByType) })),
    h("div", { class: "card" }, h("strong", { text: String(s.totalEdges) }), " edges", h("p", { class: "muted", text: by(s.edgesByType) })));
}

function nodeRow(n, selected) {
  return h("tr", { "data-node": n.id, class: n.id === selected ? "sel" : null },
    h("td", {}, h("a", { href: `#graph/${enc(n.id)}`, text: n.name })),
    h("td", {}, badge(n.type, "type")), h("td", { text: n.project || "—" }),
    h("td", { text: n.weight }), h("td", { text: n.degree }), h("td", { text: short(n.updatedAt) }));
}

async function nodeDetail(box, id) {
  let r;
  try { r = await post("graph/query", { startNodeId: id, maxDepth: 1, limit: 100 }); }
  catch (e) { box.replaceChildren(empty("node-missing", "No such node", e.message)); return; }
  const byId = new Map(r.nodes.map((n) => [n.id, n]));
  const n = byId.get(id) || r.nodes[0];
  const sources = (n.sourceObservationIds || []).slice(0, 20);
  box.replaceChildren(
    h("h2", { id: "node-name", text: n.name }),
    h("p", {}, badge(n.type, "type"), ` weight ${n.weight} · ${n.degree} edges · first seen ${when(n.createdAt)} · last ${when(n.updatedAt)}`),
    h("h3", { text: "Connected to" }),
    r.edges.length ? h("ul", { id: "node-edges", class: "plain" }, r.edges.map((e) => {
      const other = byId.get(e.sourceNodeId === id ? e.targetNodeId : e.sourceNodeId);
      return h("li", {}, badge(e.type), " ", other ? h("a", { href: `#graph/${enc(other.id)}`, text: other.name }) : "?",
        h("span", { class: "muted", text: ` ×${e.weight}` }));
    })) : h("p", { class: "muted", text: "No edges." }),
    h("h3", { text: "Seen in" }),
    sources.length ? h("ul", { class: "plain" }, sources.map((o) => h("li", {}, h("a", { href: `#sessions/?obs=${enc(o)}`, "data-obs": o, text: o }))))
      : h("p", { class: "muted", text: "No source recorded." }));
  // An observation link needs its session: resolve them lazily.
  for (const a of box.querySelectorAll("a[data-obs]")) {
    get(`observations/${enc(a.dataset.obs)}`).then(({ observation: o }) => {
      a.href = `#sessions/${enc(o.sessionId)}?obs=${enc(o.id)}`;
      a.textContent = o.title || o.id;
    }, () => { a.replaceWith(h("span", { class: "muted", text: `${a.dataset.obs} (forgotten)` })); });
  }
}

export async function render(ctx) {
  const q = h("input", { id: "graph-query", type: "search", value: ctx.params.get("q") || "", placeholder: "name contains" });
  const type = select("graph-type", [["", "all types"], ...TYPES.map((t) => [t, t])], ctx.params.get("type") || "");
  const statsBox = h("div");
  const body = h("tbody");
  const table = h("table", { id: "graph-nodes" }, h("caption", { class: "sr-only", text: "Nodes" }),
    h("thead", {}, h("tr", {}, ["node", "type", "project", "weight", "edges", "last seen"].map((c) => h("th", { scope: "col", text: c })))), body);
  const box = h("section", { id: "node-detail", class: "detail", "aria-label": "Node" });
  const none = empty("graph-empty", "The graph is empty",
    "Entities (files, symbols, packages, errors, commands, concepts) are extracted from observations by the lifecycle worker as they arrive. Record some work first:",
    "agentmemory demo");
  const selected = ctx.parts[0] || "";
  const load = async (ev) => {
    if (ev) ev.preventDefault();
    try {
      const r = await post("graph/query", { query: q.value.trim(), nodeType: type.value || null, limit: 60 });
      body.replaceChildren(...r.nodes.map((n) => nodeRow(n, selected)));
      table.hidden = r.nodes.length === 0;
    } catch (e) { toast(e.message, "err"); }
  };
  page("Graph", "What memory knows about, and what goes together.",
    statsBox, none,
    h("form", { class: "filters", role: "search", onsubmit: load }, field("Search nodes", q), field("Type", type),
      h("div", { class: "row" }, h("button", { id: "graph-search", type: "submit", text: "Search" }))),
    h("div", { class: "cols" }, h("div", { class: "scroll" }, table), box));
  const showStats = (s) => {
    statsBox.replaceChildren(stats(s));
    none.hidden = s.totalNodes > 0;
  };
  try { showStats(await get("graph/stats")); } catch (e) { statsBox.replaceChildren(h("p", { class: "err", text: e.message })); }
  await load();
  if (selected) await nodeDetail(box, selected);
  else box.replaceChildren(h("p", { class: "muted", text: "Pick a node to see its neighbours." }));
  ctx.on("kv:graph", (msg) => { if (msg.value) showStats(msg.value); });
}
