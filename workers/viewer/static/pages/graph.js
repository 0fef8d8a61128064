// Graph: the entities memory extracted (files, symbols, packages, errors, commands,
// concepts) and what goes together, drawn (lib/graphview.js); a node's neighbours and the
// observations that named it; the same nodes as a table for reading and screen readers.
import { get, post } from "../lib/api.js";
import { badge, empty, enc, field, h, page, select, short, toast, when } from "../lib/dom.js";
import { draw, legend } from "../lib/graphview.js";

const TYPES = ["file", "symbol", "package", "error", "command", "concept"];

function stats(s) {
  const by = (o) => Object.entries(o || {}).map(([k, v]) => `${k} ${v}`).join(" · ") || "none";
  return h("p", { id: "graph-stats", class: "summary" },
    h("strong", { text: String(s.totalNodes) }), " nodes ", h("span", { class: "muted", text: `(${by(s.nodesByType)})` }),
    " · ", h("strong", { text: String(s.totalEdges) }), " edges ", h("span", { class: "muted", text: `(${by(s.edgesByType)})` }));
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
  catch (e) { box.replaceChildren(empty("node-missing", "No such node", e.message)); return null; }
  const byId = new Map(r.nodes.map((n) => [n.id, n]));
  const n = byId.get(id) || r.nodes[0];
  const sources = (n.sourceObservationIds || []).slice(0, 20);
  box.replaceChildren(
    h("div", { class: "row" }, h("h2", { id: "node-name", text: n.name }),
      h("a", { href: "#graph", class: "close", text: "close", "aria-label": "Close the node" })),
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
  return r;
}

export async function render(ctx) {
  const p = ctx.params;
  const q = h("input", { id: "graph-query", type: "search", value: p.get("q") || "", placeholder: "name contains" });
  const type = select("graph-type", [["", "all types"], ...TYPES.map((t) => [t, t])], p.get("type") || "");
  const size = select("graph-size", [["60", "60 nodes"], ["120", "120 nodes"], ["200", "200 nodes"]], p.get("n") || "120");
  const quiet = h("input", { id: "graph-quiet", type: "checkbox", checked: p.get("all") ? null : true });
  const statsBox = h("div");
  const canvas = h("div", { id: "graph-canvas", class: "graph-canvas", role: "img",
    "aria-label": "The graph's nodes and edges (the table below lists them)" });
  const body = h("tbody");
  const table = h("table", { id: "graph-nodes" }, h("caption", { class: "sr-only", text: "Nodes" }),
    h("thead", {}, h("tr", {}, ["node", "type", "project", "weight", "edges", "last seen"].map((c) => h("th", { scope: "col", text: c })))), body);
  const box = h("section", { id: "node-detail", class: "detail", "aria-label": "Node" });
  const none = empty("graph-empty", "The graph is empty",
    "Entities (files, symbols, packages, errors, commands, concepts) are extracted from observations by the lifecycle worker as they arrive. Record some work first:",
    "agentmemory demo");
  const selected = ctx.parts[0] || "";
  const layout = h("div", { class: selected ? "split split-graph" : "split" }, canvas, selected ? box : null);
  let cy = null;
  const load = async (ev) => {
    if (ev) ev.preventDefault();
    const sp = new URLSearchParams();
    if (q.value.trim()) sp.set("q", q.value.trim());
    if (type.value) sp.set("type", type.value);
    if (size.value !== "120") sp.set("n", size.value);
    if (!quiet.checked) sp.set("all", "1");
    history.replaceState(null, "", `#graph${selected ? `/${enc(selected)}` : ""}${sp.toString() ? `?${sp}` : ""}`);
    try {
      const r = await post("graph/query", { query: q.value.trim(), nodeType: type.value || null, limit: Number(size.value) });
      let nodes = r.nodes;
      let edges = r.edges;
      if (selected && !nodes.some((n) => n.id === selected)) {
        const around = await post("graph/query", { startNodeId: selected, maxDepth: 1, limit: 60 }).catch(() => null);
        if (around) { nodes = [...nodes, ...around.nodes.filter((n) => !nodes.some((m) => m.id === n.id))]; edges = [...edges, ...around.edges]; }
      }
      // One-off concepts ("edit", "after") are most of a young graph's noise.
      if (quiet.checked) nodes = nodes.filter((n) => n.type !== "concept" || n.weight > 1 || n.id === selected);
      body.replaceChildren(...nodes.map((n) => nodeRow(n, selected)));
      table.hidden = nodes.length === 0;
      canvas.hidden = nodes.length === 0;
      if (cy) cy.destroy();
      cy = nodes.length ? draw(canvas, nodes, edges, { selected, onPick: (id) => { location.hash = `#graph/${enc(id)}`; } }) : null;
    } catch (e) { toast(e.message, "err"); }
  };
  ctx.onCleanup(() => { if (cy) cy.destroy(); });
  page("Graph", "What memory knows about, and what goes together. Pick a node for its neighbours.",
    statsBox, none,
    h("form", { class: "filters", role: "search", onsubmit: load }, field("Search nodes", q), field("Type", type), field("Show", size),
      h("div", { class: "row check" }, quiet, h("label", { for: "graph-quiet", text: "hide one-off concepts" })),
      h("div", { class: "row" }, h("button", { id: "graph-search", type: "submit", text: "Search" }))),
    legend(), layout,
    h("details", { class: "graph-table" }, h("summary", { text: "The nodes as a table" }), h("div", { class: "scroll" }, table)));
  const showStats = (s) => {
    statsBox.replaceChildren(stats(s));
    none.hidden = s.totalNodes > 0;
  };
  for (const el of [type, size, quiet]) el.addEventListener("change", () => load());
  try { showStats(await get("graph/stats")); } catch (e) { statsBox.replaceChildren(h("p", { class: "err", text: e.message })); }
  await load();
  if (selected) await nodeDetail(box, selected);
  ctx.on("kv:graph", (msg) => { if (msg.value) showStats(msg.value); });
}
