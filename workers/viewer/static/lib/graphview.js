// The knowledge graph drawn by cytoscape (vendor/cytoscape.esm.min.js, MIT, vendored from
// npm: canvas, no dependencies, its own force layout). The container says what it holds
// (`data-nodes`, `data-edges`) and a text legend says what colour and shape mean.
import cytoscape from "../vendor/cytoscape.esm.min.js";
import { h } from "./dom.js";

export const KINDS = {
  file: { color: "#2f6fd6", shape: "round-rectangle" },
  symbol: { color: "#1f8a4c", shape: "ellipse" },
  package: { color: "#9a6a00", shape: "hexagon" },
  error: { color: "#c0392b", shape: "triangle" },
  command: { color: "#6b5bd2", shape: "diamond" },
  concept: { color: "#6f757b", shape: "ellipse" },
};
const FORCE_UP_TO = 160;

export function legend() {
  return h("ul", { class: "legend", "aria-label": "Node kinds" }, Object.entries(KINDS).map(([kind, k]) =>
    h("li", {}, h("span", { class: `swatch swatch-${kind}`, "aria-hidden": "true" }), kind)));
}

function label(name) {
  const base = name.includes("/") ? name.split("/").pop() : name;
  return base.length > 28 ? `${base.slice(0, 27)}…` : base;
}

// nodes/edges as graph/query returns them; `onPick(id)` when a node is chosen.
export function draw(container, nodes, edges, { selected = "", onPick = () => {} } = {}) {
  const ids = new Set(nodes.map((n) => n.id));
  const maxWeight = Math.max(1, ...nodes.map((n) => n.weight || 1));
  const elements = [
    ...nodes.map((n) => ({ data: { id: n.id, label: label(n.name), kind: n.type,
      size: 18 + 34 * Math.sqrt((n.weight || 1) / maxWeight) } })),
    ...edges.filter((e) => ids.has(e.sourceNodeId) && ids.has(e.targetNodeId))
      .map((e) => ({ data: { id: e.id, source: e.sourceNodeId, target: e.targetNodeId, weight: e.weight || 1 } })),
  ];
  const fg = getComputedStyle(document.body).color;
  const cy = cytoscape({
    container,
    elements,
    minZoom: 0.2,
    maxZoom: 3,
    style: [
      { selector: "node", style: { label: "data(label)", width: "data(size)", height: "data(size)",
        "font-size": 11, color: fg, "text-valign": "bottom", "text-margin-y": 3,
        "text-outline-width": 0, "background-color": "#6f757b", "border-width": 0 } },
      ...Object.entries(KINDS).map(([kind, k]) => ({ selector: `node[kind = "${kind}"]`,
        style: { "background-color": k.color, shape: k.shape } })),
      { selector: "edge", style: { width: "mapData(weight, 1, 10, 1, 5)", "line-color": "#8a8f94", "line-opacity": 0.5,
        "curve-style": "haystack" } },
      { selector: "node:selected, node.picked", style: { "border-width": 4, "border-color": "#f2a900" } },
      { selector: "node.near", style: { "border-width": 2, "border-color": "#f2a900" } },
      { selector: "edge.near", style: { "line-color": "#f2a900", width: 3 } },
      { selector: ".faded", style: { opacity: 0.25 } },
    ],
    layout: nodes.length <= FORCE_UP_TO
      ? { name: "cose", animate: false, nodeRepulsion: 9000, idealEdgeLength: 70, randomize: true }
      : { name: "concentric", animate: false, concentric: (n) => n.degree(), levelWidth: () => 3 },
  });
  if (selected && cy.getElementById(selected).length) {
    const n = cy.getElementById(selected);
    n.addClass("picked");
    n.neighborhood().addClass("near");
    cy.elements().difference(n.closedNeighborhood()).addClass("faded");
  }
  cy.on("tap", "node", (ev) => onPick(ev.target.id()));
  container.dataset.nodes = String(cy.nodes().length);
  container.dataset.edges = String(cy.edges().length);
  container.dataset.drawn = "true";
  return cy;
}
