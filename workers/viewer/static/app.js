// The viewer: hash routes, one module per page, live events from the viewer's socket.
import { h, main, page, parseHash, plural, toast } from "./lib/dom.js";
import { Live } from "./lib/live.js";
import * as activity from "./pages/activity.js";
import * as actions from "./pages/actions.js";
import * as audit from "./pages/audit.js";
import * as graph from "./pages/graph.js";
import * as health from "./pages/health.js";
import * as lessons from "./pages/lessons.js";
import * as memories from "./pages/memories.js";
import * as profile from "./pages/profile.js";
import * as quarantine from "./pages/quarantine.js";
import * as replay from "./pages/replay.js";
import * as sessions from "./pages/sessions.js";
import * as trends from "./pages/trends.js";

const PAGES = { activity, trends, memories, sessions, replay, graph, profile, lessons, quarantine, audit, actions, health };
const live = new Live(document.getElementById("live-status"));
let cleanup = [];
let rendering = 0;

function showCounts(snap) {
  const c = snap.counts;
  const n = (v, one, many) => `${v.toLocaleString()} ${plural(v, one, many)}`;
  document.getElementById("counts").textContent = [n(c.sessions, "session"), n(c.observations, "observation"),
    n(c.latestMemories ?? c.memories, "memory", "memories"), n(c.lessons, "lesson")].join(" · ");
}

async function route(focus = true) {
  cleanup.forEach((f) => f());
  cleanup = [];
  const r = parseHash(location.hash);
  const mod = PAGES[r.name];
  document.querySelectorAll("#nav a[data-page]").forEach((a) => {
    if (a.dataset.page === r.name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  const mine = ++rendering;
  const ctx = {
    ...r,
    live,
    snapshot: live.snapshot,
    onCleanup: (fn) => cleanup.push(fn),
    on: (type, fn) => cleanup.push(live.on(type, fn)),
    current: () => mine === rendering,
    rerender: () => route(false),
  };
  if (!mod) {
    page("Not found", `There is no page "${r.name}".`, h("p", {}, h("a", { href: "#activity", text: "Go to the activity feed" })));
    return;
  }
  document.title = `${r.name[0].toUpperCase()}${r.name.slice(1)} · agentmemory`;
  try {
    await mod.render(ctx);
  } catch (e) {
    if (mine === rendering) page("Something went wrong", "", h("pre", { class: "err", text: e.message }));
  }
  if (focus && mine === rendering) main().focus({ preventScroll: true });
}

live.on("snapshot", showCounts);
live.on("event", (item) => {
  const c = live.snapshot && live.snapshot.counts;
  if (!c) return;
  if (item.kind === "observation") c.observations++;
  if (item.kind === "memory") c.memories++;
  if (item.kind === "removed") {
    c.memories -= (item.ids || []).filter((i) => i.startsWith("mem_")).length;
    c.observations -= (item.ids || []).filter((i) => i.startsWith("obs_")).length;
  }
  showCounts(live.snapshot);
});
live.on("resync", () => route(false));

window.addEventListener("hashchange", () => route());
live.start().then(() => route(), (e) => {
  toast(`could not load the snapshot: ${e.message}`, "err");
  route();
  live.retry();
});
