// Profile: a project as memory sees it: activity, top files and concepts, commands,
// recurring errors, conventions.
import { get, query } from "../lib/api.js";
import { empty, field, h, page, select, when } from "../lib/dom.js";

function list(id, title, items) {
  return h("section", { class: "card", id },
    h("h3", { text: title }),
    items && items.length ? h("ol", {}, items.map((x) => h("li", { text: typeof x === "string" ? x : x.name || JSON.stringify(x) })))
      : h("p", { class: "muted", text: "none yet" }));
}

export async function render(ctx) {
  const projects = (ctx.live.snapshot || { projects: [] }).projects;
  const chosen = ctx.params.get("project") || projects[0] || "";
  const pick = select("profile-project", projects.map((p) => [p, p]), chosen);
  pick.addEventListener("change", () => { location.hash = `#profile?project=${encodeURIComponent(pick.value)}`; });
  const box = h("div", { id: "profile" });
  page("Profile", "A project as memory knows it.", projects.length ? h("div", { class: "filters" }, field("Project", pick)) : null, box);
  if (!chosen) {
    box.replaceChildren(empty("profile-empty", "No projects yet",
      "A profile is built from a project's observations: its files, concepts, commands and errors. Record a session first:",
      "agentmemory connect claude-code --with-hooks\nagentmemory demo"));
    return;
  }
  const p = await get(`profile${query({ project: chosen })}`);
  box.replaceChildren(
    h("p", { id: "profile-summary" }, `${p.observations} observations · ${p.sessions} sessions · ${p.memories} memories · last activity ${when(p.lastActivity)}`),
    h("div", { class: "cards" },
      list("profile-files", "Top files", p.topFiles), list("profile-concepts", "Top concepts", p.topConcepts),
      list("profile-commands", "Commands", p.topCommands), list("profile-errors", "Recurring errors", p.recurringErrors),
      list("profile-conventions", "Conventions", p.conventions),
      list("profile-types", "Kinds of work", Object.entries(p.types || {}).map(([k, v]) => `${k}: ${v}`))));
}
