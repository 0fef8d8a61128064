// Lessons: what worked and what to avoid, strongest first; recall by words.
import { post } from "../lib/api.js";
import { badge, empty, enc, field, h, page, toast, when } from "../lib/dom.js";

function lessonItem(l) {
  return h("li", { class: "lesson", "data-lesson": l.id },
    h("p", { class: "content", text: l.content }),
    h("p", { class: "muted" }, badge(`strength ${(l.strength ?? 1).toFixed(2)}`),
      ` reinforced ${l.reinforcements || 0}× · ${l.project || "all projects"} · ${when(l.updatedAt || l.createdAt)}`,
      l.context ? ` · from: ${l.context}` : "",
      ...(l.sourceIds || []).slice(0, 3).map((s) => [" · ", h("a", { href: `#sessions/${enc(s)}`, text: s })])));
}

export async function render(ctx) {
  const q = h("input", { id: "lessons-query", type: "search", value: ctx.params.get("q") || "", placeholder: "words" });
  const list = h("ol", { id: "lessons-list", class: "plain lessons" });
  const none = empty("lessons-empty", "No lessons yet",
    "Lessons are saved on purpose (the memory_lesson_save MCP tool, POST /agentmemory/lessons) and learned from rules said in imported transcripts:",
    "agentmemory import-jsonl");
  const load = async (ev) => {
    if (ev) ev.preventDefault();
    try {
      const r = await post("lessons/recall", { query: q.value.trim(), limit: 100 });
      list.replaceChildren(...r.lessons.map(lessonItem));
      none.hidden = r.lessons.length > 0 || Boolean(q.value.trim());
      list.hidden = r.lessons.length === 0;
    } catch (e) { toast(e.message, "err"); }
  };
  page("Lessons", "What agents learned works, and what to avoid.",
    h("form", { class: "filters", role: "search", onsubmit: load }, field("Recall", q),
      h("div", { class: "row" }, h("button", { type: "submit", id: "lessons-search", text: "Recall" }))),
    none, list);
  await load();
  let again = null;
  ctx.on("kv:lesson", () => { clearTimeout(again); again = setTimeout(() => load(), 300); });
}
