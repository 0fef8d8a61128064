// Sessions: the list, and one session's timeline of observations (tool input and output
// readable). `#sessions/<id>?obs=<observationId>` opens one observation.
import { get, query } from "../lib/api.js";
import { badge, empty, enc, field, h, page, select, toast, short, when } from "../lib/dom.js";
import { eventBody, eventHeader } from "../lib/timeline.js";

function sessionRow(s, selected) {
  return h("tr", { "data-session": s.id, class: s.id === selected ? "sel" : null },
    h("td", {}, h("a", { href: `#sessions/${enc(s.id)}`, text: s.id })),
    h("td", { text: s.project || "—" }),
    h("td", { text: s.agentId || "—" }),
    h("td", {}, badge(s.status, s.status === "active" ? "ok" : ""), s.origin === "import" ? badge("imported", "origin") : null),
    h("td", { text: s.observationCount }),
    h("td", { text: short(s.startedAt) }),
    h("td", { text: short(s.lastSeen || s.endedAt) }));
}

async function timeline(box, sid, obs) {
  let doc;
  try { doc = await get(`replay/load${query({ sessionId: sid })}`); }
  catch (e) {
    box.replaceChildren(empty("session-missing", "No such session", `${sid}: ${e.message}`));
    return;
  }
  const s = doc.session || { id: sid };
  const byObs = new Map();
  for (const ev of doc.timeline.events) {
    if (!byObs.has(ev.observationId)) byObs.set(ev.observationId, []);
    byObs.get(ev.observationId).push(ev);
  }
  const items = [...byObs.entries()].map(([oid, evs]) =>
    h("li", { class: `obs${oid === obs ? " sel" : ""}`, id: `obs-${oid}`, "data-observation": oid },
      h("details", { open: oid === obs || evs.length <= 2 ? true : null },
        h("summary", {}, eventHeader(evs[0])),
        evs.map((ev, i) => h("div", { class: "event" }, i > 0 ? eventHeader(ev) : null, eventBody(ev))))));
  box.replaceChildren(
    h("h2", { text: `Session ${s.id}` }),
    h("p", { class: "muted" }, `${s.project || "no project"} · ${s.agentId || "no agent"} · ${s.status || ""} · `,
      `${doc.timeline.eventCount} events · started ${when(s.startedAt || doc.timeline.startedAt)} · `,
      h("a", { href: `#replay/${enc(sid)}`, id: "session-replay", text: "replay it" })),
    items.length ? h("ol", { id: "session-timeline", class: "timeline" }, items)
      : empty("session-empty", "No observations in this session", "They arrive as the agent works."));
  if (obs) {
    const el = document.getElementById(`obs-${obs}`);
    if (el) { el.scrollIntoView({ block: "center" }); el.querySelector("summary").focus(); }
  }
}

export async function render(ctx) {
  const snap = ctx.live.snapshot || { projects: [] };
  const project = select("sessions-project", [["", "all projects"], ...snap.projects.map((x) => [x, x])], ctx.params.get("project") || "");
  const body = h("tbody");
  const table = h("table", { id: "sessions-list" }, h("caption", { class: "sr-only", text: "Sessions" }),
    h("thead", {}, h("tr", {}, ["session", "project", "agent", "status", "observations", "started", "last seen"].map((c) => h("th", { scope: "col", text: c })))), body);
  const none = empty("sessions-empty", "No sessions yet",
    "A session starts when an agent's SessionStart hook runs; imported transcripts become sessions too:",
    "agentmemory connect claude-code --with-hooks\nagentmemory import-jsonl   # ~/.claude/projects");
  const box = h("section", { id: "session-detail", class: "detail", "aria-label": "Session" });
  const sid = ctx.parts[0] || "";
  const load = async () => {
    const { sessions } = await get(`sessions${query({ project: project.value, limit: 300 })}`);
    body.replaceChildren(...sessions.map((s) => sessionRow(s, sid)));
    none.hidden = sessions.length > 0 || Boolean(project.value);
    table.hidden = sessions.length === 0;
  };
  project.addEventListener("change", () => load().catch((e) => toast(e.message, "err")));
  page("Sessions", "Each session's observations in order; open one to read what the agent did.",
    h("div", { class: "filters" }, field("Project", project)), none,
    sid ? h("div", { class: "stack" }, box, h("details", {}, h("summary", { text: "All sessions" }), table))
      : table);
  await load();
  if (sid) await timeline(box, sid, ctx.params.get("obs") || "");
  let again = null;
  ctx.on("kv:session", (msg) => {
    const s = msg.value;
    const tr = s && body.querySelector(`tr[data-session="${CSS.escape(s.id)}"]`);
    if (msg.op === "put" && s) {
      const fresh = sessionRow(s, sid);
      if (tr) tr.replaceWith(fresh); else body.prepend(fresh);
      none.hidden = true;
      table.hidden = false;
    } else if (msg.op === "delete") {
      const gone = body.querySelector(`tr[data-session="${CSS.escape(msg.key)}"]`);
      if (gone) gone.remove();
    }
  });
  ctx.on("event", (item) => {
    if (sid && item.sessionId === sid && item.kind === "observation") {
      clearTimeout(again);
      again = setTimeout(() => timeline(box, sid, "").catch(() => {}), 400);
    }
  });
}
