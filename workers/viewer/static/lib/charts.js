// Charts of per-day series, drawn by uPlot (vendor/uPlot.esm.js, MIT, vendored from npm:
// small, no dependencies, canvas). Each chart also carries its numbers as text: a table in a
// <details> (for screen readers and for copying) and `data-series` on its container.
import uPlot from "../vendor/uPlot.esm.js";
import { h } from "./dom.js";

const COLORS = ["--accent", "--ok", "--warn", "--bad", "--muted"];

function color(i) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(COLORS[i % COLORS.length]).trim();
  return v || "#0b4fb3";
}

function epoch(day) {
  return Date.parse(`${day}T12:00:00Z`) / 1000;
}

export function table(days, series) {
  return h("table", { class: "chart-table" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col", text: "day" }), series.map((s) => h("th", { scope: "col", text: s.label })))),
    h("tbody", {}, days.map((d, i) => h("tr", {}, h("td", { text: d }), series.map((s) => h("td", { text: String(s.values[i]) }))))));
}

// `series`: [{label, values, bars?, axis?: "right"}]; days: ["2026-11-30", ...].
export function chart(id, title, days, series, { height = 220 } = {}) {
  const box = h("div", { class: "chart", id, "data-chart": id,
    "data-series": JSON.stringify(Object.fromEntries(series.map((s) => [s.label, s.values]))) });
  const plot = h("div", { class: "chart-plot" });
  box.append(h("h3", { text: title }), plot,
    h("details", {}, h("summary", { text: "the numbers" }), table(days, series)));
  const right = series.some((s) => s.axis === "right");
  const opts = {
    width: 600,
    height,
    series: [{}, ...series.map((s, i) => ({
      label: s.label,
      stroke: color(i),
      fill: s.bars ? `${color(i)}33` : undefined,
      width: 2,
      scale: s.axis === "right" ? "r" : "y",
      paths: s.bars ? uPlot.paths.bars({ size: [0.6, 40] }) : undefined,
      points: { show: days.length <= 45 },
    }))],
    axes: [
      { stroke: color(4), grid: { stroke: "#8884" } },
      { stroke: color(4), grid: { stroke: "#8884" }, size: 56 },
      ...(right ? [{ side: 1, scale: "r", stroke: color(4), grid: { show: false }, size: 64 }] : []),
    ],
    scales: { x: { time: true, range: (u, lo, hi) => [lo - 43200, hi + 43200] }, y: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.1)] } },
    legend: { live: false },
    cursor: { drag: { x: false, y: false } },
  };
  const data = [days.map(epoch), ...series.map((s) => s.values)];
  // Drawn once it is in the page, at the width it has there, and again when that changes.
  requestAnimationFrame(() => {
    const u = new uPlot({ ...opts, width: Math.max(280, plot.clientWidth) }, data, plot);
    box.dataset.drawn = "true";
    const ro = new ResizeObserver(() => {
      const w = Math.max(280, plot.clientWidth);
      if (Math.abs(w - u.width) > 4) u.setSize({ width: w, height });
    });
    ro.observe(plot);
  });
  return box;
}
