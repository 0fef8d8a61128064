// Profile: a project as memory sees it: activity, top files and concepts, commands,
// recurring errors, conventions.
import { get, query } from "../lib/api.js";
import { empty, field, h, page, plural, select, when } from "../lib/dom.js";

// `npm test` in a convention reads as code, not as backticks (text nodes only: no HTML).
function rich(text) {
  return String(text).split(/(`[^`]+`)/).map((part) =>
    part.length > 2 && part.startsWith("`") && part.endsWith("`") ? h("code", { class: "inline", text: part.slice(1, -1) }) : part);
}

// A long path: its folder muted, its name plain, both allowed to wrap.
function path(p) {
  const i = p.lastIndexOf("/");
  return i < 0 ? [p] : [h("span", { class: "path-dir", text: p.slice(0, i + 1) }), p.slice(i + 1)];
}

function list(id, title, items, show = rich) {
  return h("section", { class: "card", id },
    h("h3", { text: title }),
    items && items.length ? h("ol", {}, items.map((x) => h("li", { title: typeof x === "string" ? x : null },
      show(typeof x === "string" ? x : x.name || JSON.stringify(x)))))
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
    h("p", { id: "profile-summary" }, `${p.observations} ${plural(p.observations, "observation")} · ${p.sessions} ${plural(p.sessions, "session")} · ` +
      `${p.memories} ${plural(p.memories, "memory", "memories")} · last activity ${when(p.lastActivity)}`),
    h("div", { class: "cards" },
      list("profile-files", "Top files", p.topFiles, path), list("profile-concepts", "Top concepts", p.topConcepts),
      list("profile-commands", "Commands", p.topCommands), list("profile-errors", "Recurring errors", p.recurringErrors),
      list("profile-conventions", "Conventions", p.conventions),
      list("profile-types", "Kinds of work", Object.entries(p.types || {}).map(([k, v]) => `${k}: ${v}`))));
}
