// Actions: follow-ups agents track (pending -> active -> done/blocked), from the
// coordination routes (GET /agentmemory/actions) when this server has them.
import { get } from "../lib/api.js";
import { badge, empty, h, page, when } from "../lib/dom.js";

export async function render(ctx) {
  const snap = ctx.live.snapshot || {};
  const rest = snap.restUrl || `http://${location.hostname}:3111`;
  const secret = snap.secretHint || "$(cat ~/.agentmemory/secret)";
  let doc = null;
  let missing = false;
  try { doc = await get("actions"); }
  catch (e) { if (e.status === 404) missing = true; else throw e; }
  if (missing) {
    page("Actions", "Follow-ups agents track between sessions.",
      empty("actions-unavailable", "Actions are not served here yet",
        "Actions are follow-ups agents create with the coordination tools: decisions to revisit, files to inspect, tasks blocked on input. " +
        "This server does not have the coordination functions yet (GET /agentmemory/actions answers 404); once it does, they show up here.",
        "# with coordination: from any agent\nmemory_action_create { title, description, priority }"));
    return;
  }
  const items = (doc && doc.actions) || [];
  if (!items.length) {
    page("Actions", "Follow-ups agents track between sessions.",
      empty("actions-empty", "No actions tracked yet",
        "Agents create actions with the memory_action_create tool, or:",
        `curl -X POST ${rest}/agentmemory/actions \\\n  -H "Authorization: Bearer ${secret}" \\\n  -H 'Content-Type: application/json' -d '{"title":"ship v1"}'`));
    return;
  }
  // The frontier: what is unblocked and ready to pick up next.
  const ready = new Set();
  try {
    const f = await get("frontier");
    for (const x of f.frontier || []) ready.add((x.action || x).id);
  } catch (e) { /* an older server: no frontier, no marks */ }
  page("Actions", "Follow-ups agents track between sessions; ready = unblocked, on the frontier.",
    h("table", { id: "actions-list" }, h("thead", {}, h("tr", {}, ["action", "status", "priority", "tags", "updated"].map((c) => h("th", { scope: "col", text: c })))),
      h("tbody", {}, items.map((a) => h("tr", { "data-action": a.id },
        h("td", {}, h("strong", { text: a.title || a.id }), a.description ? h("p", { class: "muted", text: a.description }) : null),
        h("td", {}, badge(a.status || "pending", a.status === "done" ? "ok" : a.status === "blocked" ? "warn" : ""),
          ready.has(a.id) ? badge("ready", "ok") : null),
        h("td", { text: a.priority ?? "—" }), h("td", { text: (a.tags || []).join(", ") }),
        h("td", { text: when(a.updatedAt || a.createdAt) }))))));
}
