// Memories: server-side search and filters, a memory's detail with its version chain and a
// word diff between versions, provenance, edit (a new version) and forget (audited).
import { get, post, query } from "../lib/api.js";
import { confirmWithReason } from "../lib/confirm.js";
import { renderDiff } from "../lib/diff.js";
import { badge, camel, cut, empty, enc, field, h, main, page, plural, select, toast, short, when } from "../lib/dom.js";

const TYPES = ["fact", "decision", "pattern", "preference", "bug", "workflow", "semantic", "procedural"];

function download(name, value) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(value, null, 2)], { type: "application/json" }));
  const a = h("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function memRow(m, selected) {
  const title = m.title || cut(m.content, 120);
  return h("tr", { "data-memory": m.id, class: m.id === selected ? "sel" : null },
    h("td", {}, h("div", { class: "title-cell" }, h("a", { class: "one-line", href: `#memories/${enc(m.id)}`, title: m.title ? cut(m.content, 300) : title, text: title }),
      m.conflict ? badge("conflict", "warn") : null, m.instance ? badge(`from ${m.instance}`, "origin") : m.team ? badge("shared", "origin") : null)),
    h("td", {}, badge(m.type || "fact", "type")),
    h("td", { text: m.project || "—" }),
    h("td", { text: `v${m.version || 1}` }),
    h("td", { text: (m.strength ?? 1).toFixed(2) }),
    h("td", { text: short(m.updatedAt || m.createdAt) }));
}

async function provenance(m, chain) {
  const ids = [...(m.sourceIds || [])];
  const mine = chain && chain.versions.find((v) => v.id === m.id);
  const shared = mine && mine.origin ? h("p", { id: "memory-origin" }, badge(`from ${mine.origin}`, "origin"),
    `shared by ${mine.sharedBy || "a teammate"} from ${mine.origin}` + (m.team ? ` with team ${m.team}` : "")) : null;
  if (!ids.length) {
    if (shared) return shared;
    return h("p", { class: "muted", text: m.agentId ? `No sources recorded: saved by ${m.agentId}.` : "No sources recorded: saved by hand." });
  }
  const items = await Promise.all(ids.slice(0, 30).map(async (id) => {
    if (id.startsWith("obs_")) {
      try {
        const { observation: o } = await get(`observations/${enc(id)}`);
        return h("li", {}, h("a", { class: "prov", href: `#sessions/${enc(o.sessionId)}?obs=${enc(id)}`,
          text: o.title || id }), h("span", { class: "muted", text: ` · ${when(o.timestamp)}` }));
      } catch (e) {
        return h("li", { class: "muted", text: `${id} (forgotten)` });
      }
    }
    if (id.startsWith("mem_")) return h("li", {}, h("a", { class: "prov", href: `#memories/${enc(id)}`, text: id }));
    return h("li", {}, h("a", { class: "prov", href: `#sessions/${enc(id)}`, text: `session ${id}` }));
  }));
  return h("div", {}, shared, h("ul", { id: "memory-provenance", class: "plain" }, items));
}

function versions(chain) {
  // chain: newest first. Each older version shows what the next one changed.
  return h("ul", { id: "memory-versions", class: "versions plain" }, chain.map((v, i) => {
    const newer = chain[i - 1];
    return h("li", { "data-version": v.version, "data-id": v.id },
      h("p", {}, h("strong", { text: `v${v.version || 1}` }), i === 0 ? badge("current", "ok") : null,
        v.supersededBy && i > 0 && chain[0].id !== v.supersededBy ? badge("other branch", "warn") : null,
        h("span", { class: "muted", text: ` ${when(v.createdAt)}` }),
        i > 0 ? h("a", { href: `#memories/${enc(v.id)}`, class: "muted", text: ` ${v.id}` }) : null),
      newer ? h("div", {}, h("p", { class: "muted", text: `changed in v${newer.version}:` }), renderDiff(v.content, newer.content))
        : h("p", { class: "content", text: v.content }));
  }));
}

function editForm(m, done) {
  const title = h("input", { id: "edit-title", value: m.title || "" });
  const type = h("input", { id: "edit-type", value: m.type || "fact", list: "memory-types" });
  const content = h("textarea", { id: "edit-content", rows: 8 });
  content.value = m.content;
  const concepts = h("input", { id: "edit-concepts", value: (m.concepts || []).join(", ") });
  const files = h("input", { id: "edit-files", value: (m.files || []).join(", ") });
  const list = (xs) => (xs || []).join(", ");
  const save = async (ev) => {
    ev.preventDefault();
    const same = content.value === m.content && title.value === (m.title || "") && type.value === (m.type || "fact") &&
      concepts.value === list(m.concepts) && files.value === list(m.files);
    if (same) { toast("nothing changed: no new version saved"); done(null); return; }
    try {
      const r = await post("remember", { content: content.value, title: title.value, type: type.value,
        concepts: concepts.value, files: files.value, supersedes: m.id });
      toast(`saved as v${r.memory.version}`, "ok");
      done(r.memory.id);
    } catch (e) { toast(e.message, "err"); }
  };
  return h("form", { id: "memory-edit-form", class: "edit", onsubmit: save },
    h("h3", { text: "Edit: saved as a new version" }),
    field("Title", title), field("Type", type), field("Content", content),
    field("Concepts (comma separated)", concepts), field("Files (comma separated)", files),
    h("datalist", { id: "memory-types" }, TYPES.map((t) => h("option", { value: t }))),
    h("div", { class: "row" }, h("button", { id: "memory-save", type: "submit", text: "Save as new version" }),
      h("button", { type: "button", class: "secondary", text: "Cancel", onclick: () => done(null) })));
}

// Two machines edited this shared memory while apart: both versions are kept; a person
// picks the one to keep as the head (on every machine), the other stays listed.
function conflict(m, team) {
  const versions = team.versions.filter((v) => v.competing);
  return h("section", { id: "memory-conflict", class: "conflict", role: "alert" },
    h("h3", { text: "Two versions compete" }),
    h("p", { text: `These versions were made from the same one on different machines while they were apart. ` +
      `"${team.head === m.id ? "This one" : "The newest"}" is shown for now; keep the right one and the other stays listed as a version.` }),
    h("ul", { class: "plain" }, versions.map((v) => h("li", { "data-competing": v.id },
      h("p", {}, h("strong", { text: `v${v.version}` }), badge(`from ${v.origin || "here"}`, "origin"),
        v.id === team.head ? badge("shown now", "ok") : null,
        h("span", { class: "muted", text: ` ${when(v.createdAt)} · ${v.sharedBy || ""}` })),
      v.id === m.id ? h("p", { class: "content", text: v.content }) : renderDiff(m.content, v.content),
      h("button", { class: "keep", type: "button", "data-keep": v.id, text: "Keep this version", onclick: async () => {
        try {
          await post("team/resolve", { memoryId: v.id });
          toast("kept: the other version stays listed", "ok");
          location.hash = `#memories/${enc(v.id)}`;
        } catch (e) { toast(e.message, "err"); }
      } })))));
}

async function detail(box, id, ctx, onGone) {
  box.replaceChildren(h("p", { class: "muted", text: "loading…" }));
  let doc;
  try { doc = await get(`memories/${enc(id)}`); }
  catch (e) {
    box.replaceChildren(empty("memory-missing", "No such memory", `${id}: ${e.message}. It may have been forgotten.`));
    return;
  }
  const m = doc.memory;
  const chain = [m, ...doc.versions];
  const team = m.team ? await get(`team/chain?memoryId=${enc(m.id)}`).catch(() => null) : null;
  const actions = h("div", { class: "row" },
    h("button", { id: "memory-edit", class: "secondary", text: "Edit", onclick: () => {
      box.querySelector("#memory-edit-slot").replaceChildren(editForm(m, (newId) => {
        if (newId) location.hash = `#memories/${enc(newId)}`;
        else box.querySelector("#memory-edit-slot").replaceChildren();
      }));
      box.querySelector("#edit-content").focus();
    } }),
    h("button", { id: "memory-forget", class: "danger", text: "Forget…", onclick: async () => {
      const ok = await confirmWithReason(`Forget "${cut(m.title || m.content, 60)}"?`,
        "It is deleted from memory and every index; the audit log keeps that it was.");
      if (!ok) return;
      try {
        await post("forget", { memoryId: m.id, reason: ok.reason || "forgotten in the viewer" });
        toast("forgotten", "ok");
        onGone(m.id);
        location.hash = "#memories";
      } catch (e) { toast(e.message, "err"); }
    } }));
  box.replaceChildren(
    h("h2", { id: "memory-title", text: m.title || cut(m.content, 80) }),
    h("p", {}, badge(m.type || "fact", "type"), badge(`v${m.version || 1}`),
      m.pinned ? badge("pinned") : null, m.supersededBy ? badge("superseded", "warn") : null,
      m.instance ? badge(`from ${m.instance}`, "origin") : m.team ? badge(`shared with ${m.team}`, "origin") : null),
    team && team.conflict ? conflict(m, team) : "",
    h("p", { id: "memory-content", class: "content", text: m.content }),
    h("dl", { class: "meta" },
      h("dt", { text: "project" }), h("dd", { text: m.project || "—" }),
      h("dt", { text: "agent" }), h("dd", { text: m.agentId || "—" }),
      h("dt", { text: "created" }), h("dd", { text: when(m.createdAt) }),
      h("dt", { text: "updated" }), h("dd", { text: when(m.updatedAt) }),
      h("dt", { text: "strength" }), h("dd", { text: (m.strength ?? 1).toFixed(2) }),
      h("dt", { text: "concepts" }), h("dd", { text: (m.concepts || []).join(", ") || "—" }),
      h("dt", { text: "files" }), h("dd", { text: (m.files || []).join(", ") || "—" })),
    actions, h("div", { id: "memory-edit-slot" }),
    h("h3", { text: "Provenance" }), await provenance(m, team),
    h("h3", { text: `Versions (${chain.length})` }), versions(chain));
}

export async function render(ctx) {
  const snap = ctx.live.snapshot || { projects: [] };
  const p = ctx.params;
  const q = h("input", { id: "memories-query", type: "search", value: p.get("q") || "", placeholder: "words, files, concepts" });
  const project = select("memories-project", [["", "all projects"], ...snap.projects.map((x) => [x, x])], p.get("project") || "");
  const agent = h("input", { id: "memories-agent", value: p.get("agent") || "", placeholder: "any agent" });
  const type = select("memories-type", [["", "all types"], ...TYPES.map((t) => [t, t])], p.get("type") || "");
  const body = h("tbody");
  const table = h("table", { id: "memories-list" }, h("caption", { class: "sr-only", text: "Memories" }),
    h("thead", {}, h("tr", {}, ["memory", "type", "project", "version", "strength", "updated"].map((c) => h("th", { scope: "col", text: c })))),
    body);
  const status = h("p", { id: "memories-count", class: "muted", "aria-live": "polite" });
  const box = h("section", { id: "memory-detail", class: "detail", "aria-label": "Memory" });
  const none = empty("memories-empty", "No memories yet",
    "Memories are what agents save on purpose and what consolidation distills from sessions. Save one:",
    "agentmemory remember \"the billing service retries webhooks 5 times\"\n# or the MCP tool memory_save, from any agent");
  const selected = ctx.parts[0] || "";
  let shown = [];
  const load = async () => {
    const filters = { project: project.value, agentId: agent.value.trim(), type: type.value };
    let found;
    if (q.value.trim()) {
      const r = await post("search", { query: q.value.trim(), kinds: ["memory"], limit: 100,
        project: filters.project || null, agentId: filters.agentId || null });
      found = r.results.filter((x) => x.record).map((x) => camel(x.record))
        .filter((m) => !filters.type || m.type === filters.type);
    } else {
      found = (await get(`memories${query({ ...filters, limit: 500 })}`)).memories;
    }
    shown = found;
    body.replaceChildren(...found.map((m) => memRow(m, selected)));
    const any = found.length > 0 || q.value.trim() || filters.project || filters.type || filters.agentId;
    none.hidden = Boolean(any);
    table.hidden = !found.length;
    status.textContent = found.length ? `${found.length} ${plural(found.length, "memory", "memories")}` : (any ? "nothing matches these filters" : "");
  };
  const search = async (ev) => {
    if (ev) ev.preventDefault();
    const sp = new URLSearchParams();
    if (q.value.trim()) sp.set("q", q.value.trim());
    for (const [k, el] of [["project", project], ["agent", agent], ["type", type]]) if (el.value) sp.set(k, el.value);
    history.replaceState(null, "", `#memories${selected ? `/${enc(selected)}` : ""}${sp.toString() ? `?${sp}` : ""}`);
    try { await load(); } catch (e) { toast(e.message, "err"); }
  };
  const gone = (id) => {
    shown = shown.filter((m) => m.id !== id);
    const tr = body.querySelector(`tr[data-memory="${CSS.escape(id)}"]`);
    if (tr) tr.remove();
  };
  const exportAll = async () => {
    try {
      const doc = await get(`export${query({ project: project.value })}`);
      download(`agentmemory-export-${new Date().toISOString().slice(0, 10)}.json`, doc);
      toast(`exported ${doc.memories.length} ${plural(doc.memories.length, "memory", "memories")}, ${doc.sessions.length} ${plural(doc.sessions.length, "session")}`, "ok");
    } catch (e) { toast(e.message, "err"); }
  };
  page("Memories", "Search what agents remembered; open one for its versions and where it came from.",
    h("form", { class: "filters", role: "search", onsubmit: search },
      field("Search", q), field("Project", project), field("Agent", agent), field("Type", type),
      h("div", { class: "row" }, h("button", { id: "memories-search", type: "submit", text: "Search" }),
        h("button", { id: "memories-export", type: "button", class: "secondary", text: "Export JSON", onclick: exportAll }))),
    status, none, h("div", { class: selected ? "split split-list" : "split" }, h("div", { class: "list-pane" }, table), selected ? box : null));
  await load();
  if (selected) await detail(box, selected, ctx, gone);

  let reload = null;
  ctx.on("event", (item) => {
    if (item.kind === "removed") {
      (item.ids || []).forEach(gone);
      if (selected && (item.ids || []).includes(selected) && main().contains(box)) {
        box.prepend(h("p", { class: "warn", role: "alert", text: "This memory was just removed or superseded." }));
      }
    } else if (item.kind === "memory" && !q.value.trim()) {
      clearTimeout(reload);
      reload = setTimeout(() => load().catch(() => {}), 300);
    }
  });
  if (!selected) q.focus();
}
