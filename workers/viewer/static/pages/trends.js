// Trends: memory growing over time, what retrieval returned against the raw history it
// stands for, and what the lifecycle consolidated and forgot, per day (viewer/trends).
import { get, query } from "../lib/api.js";
import { chart } from "../lib/charts.js";
import { empty, field, h, page, plural, select, toast } from "../lib/dom.js";

const REMOVALS = { forget: "forgotten", "auto-forget": "auto-forgotten", superseded: "replaced by a version",
  team: "by the team", restore: "restore", heal: "heal", removed: "other" };

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const fmt = (n) => n.toLocaleString();

function card(id, value, label, note) {
  return h("div", { class: "stat", id },
    h("strong", { text: fmt(value) }), h("span", { text: ` ${label}` }),
    note ? h("span", { class: "muted", text: ` · ${note}` }) : null);
}

export async function render(ctx) {
  const snap = ctx.live.snapshot || { projects: [] };
  const p = ctx.params;
  const project = select("trends-project", [["", "all projects"], ...snap.projects.map((x) => [x, x])], p.get("project") || "");
  const span = select("trends-days", [["14", "14 days"], ["30", "30 days"], ["90", "90 days"], ["365", "a year"]], p.get("days") || "30");
  const body = h("div", { id: "trends", class: "stack" });
  const status = h("p", { id: "trends-status", class: "muted", "aria-live": "polite" });
  const reload = () => {
    const sp = new URLSearchParams();
    if (project.value) sp.set("project", project.value);
    if (span.value !== "30") sp.set("days", span.value);
    location.hash = `#trends${sp.toString() ? `?${sp}` : ""}`;
  };
  project.addEventListener("change", reload);
  span.addEventListener("change", reload);
  page("Trends", "What memory took in, what retrieval gave back, and what the lifecycle kept, per day.",
    h("div", { class: "filters" }, field("Project", project), field("Period", span)), status, body);
  let t;
  try { t = await get(`viewer/trends${query({ days: span.value, project: project.value })}`); }
  catch (e) { toast(e.message, "err"); body.replaceChildren(h("p", { class: "err", text: e.message })); return; }
  if (!ctx.current()) return;
  status.textContent = t.behind ? `catching up: ${fmt(t.behind)} events still to count; this page refreshes` : "";
  if (t.behind) {
    const again = setTimeout(() => { if (ctx.current()) ctx.rerender(); }, 3000);
    ctx.onCleanup(() => clearTimeout(again));
  }
  const took = sum(t.observations) + sum(t.memories) + sum(t.versions) + sum(t.sessions);
  if (!took && !sum(t.searches) && !sum(t.contexts)) {
    body.replaceChildren(empty("trends-empty", "Nothing to chart yet",
      "These charts count what memory takes in each day (observations, memories, sessions), what search and " +
      "session-start context return, and what the lifecycle consolidates and forgets. Record some work first:",
      "agentmemory connect claude-code --with-hooks\nagentmemory demo"));
    return;
  }
  const removed = Object.entries(t.removed).map(([k, v]) => ({ label: REMOVALS[k] || k, values: v, bars: true }));
  const saved = sum(t.tokensSaved);
  body.replaceChildren(
    h("section", { class: "trend", id: "trend-growth" },
      h("div", { class: "stats" },
        card("stat-observations", sum(t.observations), plural(sum(t.observations), "observation")),
        card("stat-memories", sum(t.memories), plural(sum(t.memories), "new memory", "new memories")),
        card("stat-sessions", sum(t.sessions), plural(sum(t.sessions), "session"))),
      chart("chart-growth", "Memory over time", t.days, [
        { label: "observations", values: t.observations, bars: true },
        { label: "memories", values: t.memories },
        { label: "new versions", values: t.versions },
        { label: "sessions", values: t.sessions },
      ])),
    h("section", { class: "trend", id: "trend-recall" },
      h("div", { class: "stats" },
        card("stat-searches", sum(t.searches), plural(sum(t.searches), "search", "searches")),
        card("stat-contexts", sum(t.contexts), plural(sum(t.contexts), "context block"), "session starts and on demand"),
        card("stat-saved", saved, "tokens saved", `raw history now ${fmt(t.rawTokens[t.rawTokens.length - 1] || 0)} tokens; tokens ≈ characters ÷ 4`)),
      chart("chart-recall", "What retrieval returned", t.days, [
        { label: "searches", values: t.searches, bars: true },
        { label: "context blocks", values: t.contexts, bars: true },
        { label: "tokens returned", values: t.tokensReturned, axis: "right" },
      ]),
      chart("chart-tokens", "Tokens: what context gave back against the raw history", t.days, [
        { label: "raw history", values: t.rawTokens },
        { label: "tokens saved", values: t.tokensSaved },
        { label: "tokens returned", values: t.tokensReturned },
      ]),
      t.recallProjectWide && project.value ? h("p", { class: "muted", text: "Retrieval is counted for every project." }) : null),
    h("section", { class: "trend", id: "trend-lifecycle" },
      h("div", { class: "stats" },
        card("stat-consolidated", sum(t.consolidated), plural(sum(t.consolidated), "consolidated memory", "consolidated memories")),
        card("stat-removed", sum(removed.map((r) => sum(r.values))), "removed")),
      chart("chart-lifecycle", "Consolidation and forgetting", t.days, [
        { label: "consolidated", values: t.consolidated, bars: true },
        ...removed,
      ])));
}
