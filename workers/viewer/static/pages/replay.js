// Replay: pick a session (native or imported) and step through its events. Play/pause,
// 0.5x-4x; space toggles, the arrow keys step, Home/End jump. Each event stays on screen
// for its reading time divided by the speed (real gaps may be hours).
import { get, post, query } from "../lib/api.js";
import { badge, empty, enc, field, h, page, plural, select, toast, when } from "../lib/dom.js";
import { KIND_LABELS, eventBody, eventHeader, offset } from "../lib/timeline.js";

const SPEEDS = ["0.5", "1", "2", "4"];

function importForm(onDone) {
  const path = h("input", { id: "replay-import-path", placeholder: "~/.claude/projects (default)", size: 40 });
  const file = h("input", { id: "replay-import-file", type: "file", accept: ".jsonl,application/x-ndjson,application/json" });
  const out = h("p", { id: "replay-import-result", class: "muted", "aria-live": "polite" });
  const run = async (ev) => {
    ev.preventDefault();
    out.textContent = "importing…";
    try {
      let body = path.value.trim() ? { path: path.value.trim() } : {};
      if (file.files && file.files[0]) body = { content: await file.files[0].text(), name: file.files[0].name };
      const r = await post("replay/import-jsonl", body);
      out.textContent = `imported ${r.sessionIds.length} session(s): ${r.stored} new of ${r.observations} events, ${r.lessons} lesson(s)`;
      onDone(r.sessionIds[0]);
    } catch (e) { out.textContent = e.message; out.className = "err"; }
  };
  return h("form", { id: "replay-import", class: "filters", onsubmit: run },
    field("Transcript folder or .jsonl on this machine", path),
    field("or upload a Claude Code transcript", file),
    h("div", { class: "row" }, h("button", { type: "submit", class: "secondary", id: "replay-import-btn", text: "Import" })),
    out);
}

class Player {
  constructor(events, els) {
    this.events = events;
    this.els = els;
    this.i = 0;
    this.speed = 1;
    this.timer = null;
  }

  get playing() { return this.timer !== null; }

  delay() {
    const ev = this.events[this.i];
    return Math.round((ev ? ev.durationMs : 300) / this.speed);
  }

  show(i) {
    this.i = Math.max(0, Math.min(this.events.length - 1, i));
    const ev = this.events[this.i];
    const { scrub, stage, list, pos, root } = this.els;
    scrub.value = String(this.i);
    scrub.setAttribute("aria-valuetext", `event ${this.i + 1} of ${this.events.length}: ${ev.label}`);
    pos.textContent = `${this.i + 1} / ${this.events.length} · +${offset(ev.offsetMs)}`;
    root.dataset.index = String(this.i);
    root.dataset.delayMs = String(this.delay());
    stage.replaceChildren(h("article", { class: `stage-event kind-${ev.kind}`, "data-event": ev.id }, eventHeader(ev), eventBody(ev)));
    list.querySelectorAll("li.sel").forEach((li) => li.classList.remove("sel"));
    const li = list.children[this.i];
    if (li) { li.classList.add("sel"); li.scrollIntoView({ block: "nearest" }); }
  }

  step(d) { this.show(this.i + d); if (this.i === this.events.length - 1) this.pause(); }

  play() {
    if (this.i >= this.events.length - 1) this.show(0);
    const tick = () => {
      if (this.i >= this.events.length - 1) { this.pause(); return; }
      this.show(this.i + 1);
      this.timer = setTimeout(tick, this.delay());
    };
    this.timer = setTimeout(tick, this.delay());
    this.sync();
  }

  pause() { clearTimeout(this.timer); this.timer = null; this.sync(); }

  toggle() { if (this.playing) this.pause(); else this.play(); }

  setSpeed(s) { this.speed = s; this.els.root.dataset.speed = String(s); this.els.root.dataset.delayMs = String(this.delay()); }

  sync() {
    const b = this.els.play;
    b.textContent = this.playing ? "Pause" : "Play";
    b.setAttribute("aria-pressed", this.playing ? "true" : "false");
    this.els.root.dataset.playing = this.playing ? "true" : "false";
  }
}

async function player(box, sid, ctx) {
  const doc = await get(`replay/load${query({ sessionId: sid })}`);
  const events = doc.timeline.events;
  const s = doc.session || { id: sid };
  if (!events.length) {
    box.replaceChildren(empty("replay-empty-session", "This session has no events yet", "Its observations appear as the agent works."));
    return;
  }
  const scrub = h("input", { id: "replay-scrub", type: "range", min: 0, max: events.length - 1, step: 1, value: 0,
    "aria-label": "Position in the session" });
  const play = h("button", { id: "replay-play", type: "button", "aria-pressed": "false", text: "Play" });
  const speed = select("replay-speed", SPEEDS.map((x) => [x, `${x}x`]), "1");
  const pos = h("span", { id: "replay-pos", class: "muted" });
  const stage = h("section", { id: "replay-stage", class: "stage", "aria-live": "polite", "aria-label": "Current event" });
  const list = h("ol", { id: "replay-events", class: "replay-events" }, events.map((ev, i) =>
    h("li", { "data-index": i, class: `kind-${ev.kind}` }, h("button", { type: "button", class: "linkish", "data-index": i,
      text: `${KIND_LABELS[ev.kind] || ev.kind}: ${ev.label}` }))));
  const root = h("div", { id: "replay-player", class: "player", tabindex: "-1" });
  const p = new Player(events, { scrub, stage, list, pos, play, root });
  play.addEventListener("click", () => p.toggle());
  speed.addEventListener("change", () => p.setSpeed(Number(speed.value)));
  scrub.addEventListener("input", () => { p.pause(); p.show(Number(scrub.value)); });
  list.addEventListener("click", (ev) => {
    const i = ev.target.closest("button[data-index]");
    if (i) { p.pause(); p.show(Number(i.dataset.index)); }
  });
  const prev = h("button", { id: "replay-prev", type: "button", class: "secondary", "aria-label": "Previous event", text: "◀", onclick: () => { p.pause(); p.step(-1); } });
  const next = h("button", { id: "replay-next", type: "button", class: "secondary", "aria-label": "Next event", text: "▶", onclick: () => { p.pause(); p.step(1); } });
  root.append(
    h("p", { class: "muted" }, `${s.project || "no project"} · ${when(s.startedAt || doc.timeline.startedAt)} · ${events.length} ${plural(events.length, "event")} `,
      s.origin === "import" ? badge("imported", "origin") : null),
    h("div", { class: "controls row" }, prev, play, next, field("Speed", speed), pos),
    scrub,
    h("p", { class: "muted keys", text: "Keys: space plays or pauses, ← → step, Home/End jump." }),
    h("div", { class: "cols" }, stage, list));
  box.replaceChildren(root);
  p.setSpeed(1);
  p.show(0);
  p.sync();
  const keys = (ev) => {
    const t = ev.target;
    if (t && (t.tagName === "INPUT" && t.type !== "range" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    if (ev.key === " " || ev.code === "Space") { ev.preventDefault(); p.toggle(); }
    else if (ev.key === "ArrowRight") { ev.preventDefault(); p.pause(); p.step(1); }
    else if (ev.key === "ArrowLeft") { ev.preventDefault(); p.pause(); p.step(-1); }
    else if (ev.key === "Home") { ev.preventDefault(); p.pause(); p.show(0); }
    else if (ev.key === "End") { ev.preventDefault(); p.pause(); p.show(events.length - 1); }
  };
  document.addEventListener("keydown", keys);
  ctx.onCleanup(() => { document.removeEventListener("keydown", keys); p.pause(); });
}

export async function render(ctx) {
  const sid = ctx.parts[0] || "";
  const { sessions } = await get("replay/sessions?limit=500");
  const pick = select("replay-session", [["", "— pick a session —"], ...sessions.map((s) =>
    [s.id, `${s.origin === "import" ? "[imported] " : ""}${s.project || "?"} · ${s.id} · ${s.observationCount} obs · ${when(s.startedAt)}`])], sid);
  pick.addEventListener("change", () => { location.hash = pick.value ? `#replay/${enc(pick.value)}` : "#replay"; });
  const box = h("section", { id: "replay-box", "aria-label": "Player" });
  const none = empty("replay-empty", "No sessions to replay yet",
    "Replay shows a session's prompts, tool calls, results and responses one at a time. " +
    "Sessions come from the hooks, or import Claude Code transcripts:",
    "agentmemory import-jsonl   # reads ~/.claude/projects");
  page("Replay", "Step through a session as it happened.",
    sessions.length ? h("div", { class: "filters" }, field("Session", pick)) : none,
    h("details", { open: sessions.length ? null : true }, h("summary", { text: "Import transcripts" }),
      importForm((first) => { if (first) location.hash = `#replay/${enc(first)}`; else toast("nothing to import", ""); })),
    box);
  if (sid) {
    try { await player(box, sid, ctx); }
    catch (e) { box.replaceChildren(empty("replay-missing", "Cannot replay this session", e.message)); }
  }
}
