// The console single page: hash routes, one render function per page, no dependencies.
// Everything from the bus is shown with textContent (never innerHTML): payloads are untrusted.
"use strict";

const main = document.getElementById("main");
let cleanup = [];  // timers and event sources of the current page

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

async function api(path, opts = {}) {
  const init = { credentials: "same-origin", headers: {}, ...opts };
  if (opts.json !== undefined) {
    init.body = JSON.stringify(opts.json);
    init.headers["content-type"] = "application/json";
    init.method = init.method || "POST";
  }
  const resp = await fetch(path, init);
  if (resp.status === 401) { location.href = "/login"; throw new Error("signed out"); }
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const e = body.error || {};
    throw new Error(`${e.code || resp.status}: ${e.message || resp.statusText}` +
                    (e.field ? ` (field ${e.field})` : ""));
  }
  return body;
}

function toast(msg, cls = "") {
  const t = document.getElementById("toast");
  t.textContent = msg; t.className = cls; t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 5000);
}

const pretty = (v) => JSON.stringify(v, null, 2);
const ago = (ts) => ts ? `${Math.max(0, Math.round(Date.now() / 1000 - ts))}s ago` : "—";
const when = (ts) => ts ? new Date(ts * 1000).toLocaleTimeString() : "—";
const ms = (v) => `${v < 10 ? v.toFixed(2) : v.toFixed(1)} ms`;

function table(cols, rows, opts = {}) {
  return h("table", { id: opts.id },
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { text: c })))),
    h("tbody", {}, rows));
}

function every(fn, period) {
  fn();
  const id = setInterval(fn, period);
  cleanup.push(() => clearInterval(id));
}

function page(title, ...kids) {
  main.replaceChildren(h("h2", { text: title }), ...kids);
}

// ---- Workers ------------------------------------------------------------------------
function workersPage() {
  const body = h("tbody");
  page("Workers", h("table", { id: "workers-table" },
    h("thead", {}, h("tr", {}, ["worker", "replica", "state", "pid", "restarts", "functions",
      "started", "last exit", "last seen", "cpu s", "rss MB", "instances"].map((c) => h("th", { text: c })))),
    body));
  every(async () => {
    try {
      const { workers } = await api("/api/workers");
      body.replaceChildren(...workers.map((w) => h("tr", { "data-worker": w.name },
        h("td", { text: w.name }), h("td", { text: w.replica ?? "—" }),
        h("td", { class: ["running", "supervisor"].includes(w.state) ? "ok" : "warn",
          text: w.state + (w.supervised || w.state === "supervisor" ? "" : " (not spawned here)") }),
        h("td", { text: w.pid ?? "—" }), h("td", { text: w.restarts }),
        h("td", {}, w.functions.map((f) => h("a", { href: `#/functions/${f}`, text: f + " " }))),
        h("td", { text: when(w.started_at) }), h("td", { text: w.last_exit ?? "—" }),
        h("td", { text: ago(w.last_seen) }), h("td", { text: w.cpu_s ?? "—" }),
        h("td", { text: w.rss_mb ?? "—" }), h("td", { text: w.instances }))));
    } catch (e) { toast(e.message, "err"); }
  }, 3000);
}

// ---- Functions ----------------------------------------------------------------------
async function functionsPage(selected, params) {
  const { functions } = await api("/api/functions");
  const fn = functions.find((f) => f.function_id === selected) || null;
  const filter = h("input", { id: "function-filter", type: "search", size: 28, "aria-label": "Filter functions",
    placeholder: "filter: id, description, route, tool", value: params.get("q") || "" });
  const count = h("p", { id: "function-count", class: "muted" });
  const list = h("div", { class: "list", id: "function-list" });
  const hay = (f) => [f.function_id, f.description, f.http ? `${f.http.method} ${f.http.path}` : "",
    f.tool ? f.tool.name : "", ...(f.workers || [])].join(" ").toLowerCase();
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = functions.filter((f) => !q || hay(f).includes(q));
    const qs = q ? `?q=${encodeURIComponent(filter.value.trim())}` : "";
    list.replaceChildren(...shown.map((f) => h("a", { href: `#/functions/${f.function_id}${qs}`, class: f === fn ? "sel" : null,
      "data-function": f.function_id }, f.function_id,
      h("span", { class: "muted", text: `  ${f.num_requests} calls` }))));
    count.textContent = q ? `${shown.length} of ${functions.length} functions` : `${functions.length} functions`;
  };
  filter.addEventListener("input", () => {
    const q = filter.value.trim();
    history.replaceState(null, "", `#/functions${selected ? `/${selected}` : ""}${q ? `?q=${encodeURIComponent(q)}` : ""}`);
    draw();
  });
  draw();
  const detail = fn ? functionDetail(fn) : h("p", { class: "muted",
    text: `${functions.length} functions on the bus; pick one to see its schema and invoke it.` });
  page("Functions", h("div", { class: "cols" }, h("div", {}, filter, count, list), detail));
  if (!fn) filter.focus();
}

function functionDetail(fn) {
  const payload = h("textarea", { id: "invoke-payload", "aria-label": "Payload (JSON)" });
  const example = examplePayload(fn.request_schema);
  payload.value = example;
  const out = h("div", { id: "invoke-output" });
  const run = async () => {
    let value;
    try { value = payload.value.trim() ? JSON.parse(payload.value) : null; }
    catch (e) { toast(`payload is not JSON: ${e.message}`, "err"); return; }
    out.replaceChildren(h("p", { class: "muted", text: "calling…" }));
    try {
      const r = await api("/api/invoke", { json: { function_id: fn.function_id, payload: value } });
      out.replaceChildren(
        h("div", { class: "row" },
          h("span", { id: "invoke-status", class: r.ok ? "ok" : "err", text: r.ok ? "ok" : "error" }),
          h("span", { class: "muted", text: ms(r.duration_ms) }),
          r.trace_id ? h("a", { id: "invoke-trace", href: `#/traces/${r.trace_id}`,
            text: `trace ${r.trace_id}` }) : null),
        h("pre", { id: "invoke-result", text: pretty(r.ok ? r.result : { error: r.error }) }));
    } catch (e) { out.replaceChildren(h("pre", { class: "err", text: e.message })); }
  };
  return h("div", {},
    h("h3", { text: fn.function_id }),
    h("p", { text: fn.description || "(no description)" }),
    h("p", { class: "muted", text: `workers: ${fn.workers.join(", ")} · instances ${fn.instances}` +
      ` · ${fn.num_requests} calls · ${fn.num_errors} errors · avg ${ms(fn.average_ms)}` }),
    fn.last_error ? h("p", { class: "err", text: `last error: ${fn.last_error}` }) : null,
    fn.http ? h("p", { id: "function-route", text: `REST: ${fn.http.method} ${fn.http.path}` +
      (fn.http.source ? ` (request from the ${fn.http.source})` : "") }) : null,
    fn.tool ? h("p", { id: "function-tool", text: `MCP tool: ${fn.tool.name}` +
      (fn.tool.tier && fn.tool.tier !== "all" ? ` (tier ${fn.tool.tier})` : "") }) : null,
    h("h3", { text: "request schema" }), h("pre", { text: pretty(fn.request_schema) }),
    h("h3", { text: "response schema" }), h("pre", { text: pretty(fn.response_schema) }),
    h("h3", { text: "invoke with a JSON payload" }),
    h("p", { class: "muted", text: "An example made from the request schema; edit it as you need." }), payload,
    h("div", { class: "row" }, h("button", { id: "invoke-btn", onclick: run, text: "Invoke" }),
      h("button", { id: "invoke-reset", class: "secondary", text: "Reset to the example",
        onclick: () => { payload.value = example; } })),
    out);
}

// ---- Triggers -----------------------------------------------------------------------
// One section per kind; each row says what fires it in one line (route, schedule, queue…);
// the full declaration, schemas included, stays folded until asked for.
const SCHEMA_KEYS = ["body_schema", "response_schema"];

function firesOn(t) {
  const c = t.config || {};
  if (t.kind === "http") {
    return [`${c.method || "GET"} ${c.path || ""}`, c.auth === "none" ? "public" : "", c.accept ? `answers ${c.accept}` : "",
      c.summary || ""].filter(Boolean).join(" · ");
  }
  if (t.kind === "cron") return [`schedule ${c.schedule}`, c.timeout ? `timeout ${c.timeout} s` : ""].filter(Boolean).join(" · ");
  if (t.kind === "queue") return [`queue ${c.queue}`, c.max_attempts ? `${c.max_attempts} attempts` : "",
    c.concurrency ? `concurrency ${c.concurrency}` : ""].filter(Boolean).join(" · ");
  if (t.kind === "stream") return `stream ${c.stream || ""}${c.subject ? ` (${c.subject})` : ""}`;
  if (t.kind === "state") return `bucket ${c.bucket || ""}${c.key ? ` key ${c.key}` : ""}`;
  if (t.kind === "subscribe") return `subject ${c.subject || ""}`;
  return "";
}

function foldedConfig(t) {
  const plain = Object.fromEntries(Object.entries(t.config || {}).filter(([k]) => !SCHEMA_KEYS.includes(k)));
  const schemas = SCHEMA_KEYS.filter((k) => t.config && t.config[k]);
  return h("details", { class: "config" }, h("summary", { text: "declaration" }),
    h("pre", { text: pretty(plain) }),
    schemas.map((k) => h("details", { class: "schema" }, h("summary", { text: k.replace("_", " ") }),
      h("pre", { text: pretty(t.config[k]) }))));
}

async function triggersPage(params) {
  const { triggers } = await api("/api/triggers");
  const result = h("pre", { id: "trigger-result", hidden: true });
  const show = (r) => { result.hidden = false; result.textContent = pretty(r); };
  const filter = h("input", { id: "trigger-filter", type: "search", placeholder: "filter: function, path, schedule…",
    value: params.get("q") || "", size: 40 });
  const sections = h("div", { id: "trigger-sections" });
  const kinds = [...new Set(triggers.map((t) => t.kind))].sort();
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const match = (t) => !q || `${t.id} ${t.function_id} ${firesOn(t)} ${t.worker}`.toLowerCase().includes(q);
    sections.replaceChildren(...kinds.map((kind) => {
      const mine = triggers.filter((t) => t.kind === kind && match(t));
      if (!mine.length) return null;
      const rows = mine.map((t) => {
        let action = null;
        if (t.kind === "cron") {
          action = h("button", { class: "secondary", text: "Fire now", onclick: async () => {
            try { show(await api(`/api/triggers/cron/${t.id}/fire`, { method: "POST" })); }
            catch (e) { toast(e.message, "err"); } } });
        } else if (t.kind === "http") {
          action = h("button", { class: "secondary", text: "Test request", onclick: () => httpForm(t, show) });
        }
        return h("tr", { "data-trigger": t.id }, h("td", { text: t.kind }),
          h("td", {}, h("a", { href: `#/functions/${t.function_id}`, text: t.function_id })),
          h("td", {}, h("div", { class: "fires", text: firesOn(t) }), foldedConfig(t)),
          h("td", { text: t.worker }), h("td", {}, action));
      });
      return h("section", { "data-kind": kind }, h("h3", { text: `${kind} (${mine.length})` }),
        table(["kind", "function", "fires on", "declared by", ""], rows, { id: `triggers-${kind}` }));
    }).filter(Boolean));
  };
  filter.addEventListener("input", draw);
  page("Triggers", h("p", { class: "muted", text: `${triggers.length} triggers declared; open a row's declaration for its full config and schemas.` }),
    h("div", { class: "row" }, filter), h("div", { id: "http-form" }), result, sections);
  draw();
}

function httpForm(t, show) {
  const method = h("select", { id: "http-method" }, ["GET", "POST", "PUT", "PATCH", "DELETE"].map(
    (m) => h("option", { selected: m === (t.config.method || "GET") ? true : null, text: m })));
  const path = h("input", { id: "http-path", size: 50 });
  path.value = t.config.path || "/";
  const body = h("textarea", { id: "http-body" });
  body.value = "{}";
  const send = async () => {
    let json = null;
    try { json = body.value.trim() ? JSON.parse(body.value) : null; }
    catch (e) { toast(`body is not JSON: ${e.message}`, "err"); return; }
    try {
      show(await api("/api/triggers/http-test",
        { json: { method: method.value, path: path.value, body: json } }));
    } catch (e) { toast(e.message, "err"); }
  };
  document.getElementById("http-form").replaceChildren(h("h3", { text: "test HTTP request" }),
    h("div", { class: "row" }, method, path), body,
    h("div", { class: "row" }, h("button", { onclick: send, text: "Send" })));
}

// ---- KV -----------------------------------------------------------------------------
async function kvPage(bucket, key) {
  const { buckets } = await api("/api/kv");
  const list = h("div", { class: "list", id: "bucket-list" }, buckets.map((b) =>
    h("a", { href: `#/kv/${b.bucket}`, class: b.bucket === bucket ? "sel" : null },
      b.bucket, h("span", { class: "muted", text: `  ${b.values}` }))));
  const right = h("div", { id: "kv-detail" });
  page("KV", h("div", { class: "cols" }, list, right));
  if (!bucket) { right.textContent = "Pick a bucket."; return; }
  const prefix = h("input", { id: "kv-prefix", placeholder: "key prefix" });
  const keysBox = h("div", { class: "list", id: "kv-keys" });
  const entryBox = h("div", { id: "kv-entry" });
  const loadKeys = async () => {
    const r = await api(`/api/kv/${encodeURIComponent(bucket)}?prefix=${encodeURIComponent(prefix.value)}`);
    keysBox.replaceChildren(h("p", { class: "muted", text: `${r.total} keys` }),
      ...r.keys.map((k) => h("a", { href: `#/kv/${bucket}/${k}`, class: k === key ? "sel" : null,
        text: k })));
  };
  prefix.addEventListener("change", loadKeys);
  right.replaceChildren(h("div", { class: "row" }, prefix), h("div", { class: "cols" }, keysBox, entryBox));
  await loadKeys();
  if (key) await kvEntry(bucket, key, entryBox);
}

async function kvEntry(bucket, key, box) {
  const path = `/api/kv/${encodeURIComponent(bucket)}/${key}`;
  let e;
  try { e = await api(path); } catch (err) { box.replaceChildren(h("p", { class: "err", text: err.message })); return; }
  const value = h("textarea", { id: "kv-value", rows: 16, readonly: e.read_only ? true : null });
  value.value = e.value;
  const save = async () => {
    try {
      const r = await api(path, { method: "PUT", json: { value: value.value, revision: e.revision, json: e.is_json } });
      toast(`saved: revision ${r.revision}`, "ok"); await kvEntry(bucket, key, box);
    } catch (err) { toast(err.message, "err"); }
  };
  const del = async () => {
    if (!confirm(`Delete ${key}?`)) return;
    try { await api(`${path}?revision=${e.revision}`, { method: "DELETE" }); toast("deleted", "ok");
      location.hash = `#/kv/${bucket}`; } catch (err) { toast(err.message, "err"); }
  };
  // A memory record: forgotten through mem::forget, which updates every index and audits.
  const forget = async () => {
    const reason = prompt(`Forget ${key}? It is deleted from memory and every index; the audit log keeps that it was. Reason:`);
    if (reason === null) return;
    try {
      const r = await api("/api/invoke", { json: { function_id: "mem::forget",
        payload: { [e.forget_field]: [key], reason: reason || "forgotten from the console" } } });
      if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
      toast(`forgotten (${r.result.deleted}); see the trace`, "ok");
      location.hash = r.trace_id ? `#/traces/${r.trace_id}` : `#/kv/${bucket}`;
    } catch (err) { toast(err.message, "err"); }
  };
  const actions = e.read_only
    ? h("div", { id: "kv-readonly" },
      h("p", { class: "warn", text: `Read-only: ${e.read_only}.` }),
      h("div", { class: "row" },
        e.viewer_url ? h("a", { id: "kv-viewer-link", href: e.viewer_url, target: "_blank", rel: "noopener", text: "Open in the viewer ↗" }) : null,
        e.forget_field ? h("button", { id: "kv-forget", class: "danger", onclick: forget, text: "Forget (audited)…" }) : null))
    : h("div", { class: "row" }, h("button", { id: "kv-save", onclick: save, text: "Save (CAS)" }),
      h("button", { class: "danger", onclick: del, text: "Delete" }));
  box.replaceChildren(h("h3", { text: key }),
    h("p", { class: "muted", id: "kv-revision", text: `revision ${e.revision}` }), value, actions,
    h("h3", { text: "history" }),
    table(["revision", "op", "stored at"], e.history.map((r) => h("tr", {},
      h("td", { text: r.revision }), h("td", { text: r.op }),
      h("td", { class: "kv-created", text: r.created ? new Date(r.created).toLocaleString() : "—" }))),
      { id: "kv-history" }));
}

// ---- Streams ------------------------------------------------------------------------
async function streamsPage(name) {
  const { streams } = await api("/api/streams");
  const rows = streams.map((s) => h("tr", { class: "click", "data-stream": s.name,
    onclick: () => { location.hash = `#/streams/${s.name}`; } },
    h("td", { text: s.name }), h("td", { text: s.subjects.join(" ") }),
    h("td", { text: s.messages }), h("td", { text: s.bytes }),
    h("td", { text: `${s.first_seq}…${s.last_seq}` }), h("td", { text: s.consumers })));
  const tail = h("pre", { id: "tail" });
  page("Streams", table(["stream", "subjects", "messages", "bytes", "seq", "consumers"], rows,
    { id: "streams-table" }), name ? h("h3", { text: `live tail of ${name}` }) : null,
    name ? tail : null);
  if (!name) return;
  const es = new EventSource(`/api/streams/${encodeURIComponent(name)}/tail?backlog=20`);
  cleanup.push(() => es.close());
  es.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    tail.prepend(h("div", { class: "tail-line" }, h("span", { class: "muted",
      text: `#${m.seq} ${m.subject} ` }), m.data));
    while (tail.childNodes.length > 500) tail.lastChild.remove();
  };
}

// ---- Queues -------------------------------------------------------------------------
async function queuesPage() {
  const { queues } = await api("/api/queues");
  const dead = h("div", { id: "dead-letters" });
  const act = async (verb, sel) => {
    try { const r = await api(`/api/queues/dead/${verb}`, { json: sel });
      toast(`${verb}: ${r.result ? r.result.count : 0}`, "ok"); route(); }
    catch (e) { toast(e.message, "err"); }
  };
  page("Queues", table(["queue", "stream", "waiting", "pending", "in flight", "redelivered",
    "dead letters", ""], queues.map((q) => h("tr", { "data-queue": q.queue },
    h("td", { text: q.queue }), h("td", { text: q.stream }), h("td", { text: q.waiting }),
    h("td", { text: q.pending }), h("td", { text: q.in_flight }), h("td", { text: q.redelivered }),
    h("td", { class: q.dead ? "err" : null, text: q.dead }),
    h("td", {}, q.dead ? [h("button", { class: "secondary", text: "Redrive all",
      onclick: () => act("redrive", { queue: q.queue }) }), " ",
      h("button", { class: "danger", text: "Discard all",
        onclick: () => act("discard", { queue: q.queue }) })] : null))), { id: "queues-table" }),
    h("h3", { text: "dead letters" }), dead);
  try {
    const page_ = await api("/api/queues/dead?limit=200");
    dead.replaceChildren(table(["seq", "queue", "function", "error", "attempts", "payload", ""],
      page_.items.map((d) => h("tr", { "data-seq": d.seq }, h("td", { text: d.seq }),
        h("td", { text: d.queue }), h("td", { text: d.function_id }),
        h("td", { class: "err", text: `${d.error.code || ""} ${d.error.message || ""}` }),
        h("td", { text: d.attempts }), h("td", {}, h("code", { text: JSON.stringify(d.payload) })),
        h("td", {}, h("button", { class: "secondary", text: "Redrive",
          onclick: () => act("redrive", { seq: d.seq }) }), " ",
          h("button", { class: "danger", text: "Discard",
            onclick: () => act("discard", { seq: d.seq }) }))))));
  } catch (e) { dead.replaceChildren(h("p", { class: "muted", text: e.message })); }
}

// ---- Traces -------------------------------------------------------------------------
async function tracesPage(params) {
  const fn = h("input", { id: "trace-function", placeholder: "function", value: params.get("function") || "" });
  const status = h("select", { id: "trace-status" }, ["", "OK", "ERROR"].map((s) =>
    h("option", { value: s, selected: s === (params.get("status") || "") ? true : null, text: s || "any status" })));
  const minMs = h("input", { id: "trace-min-ms", placeholder: "min ms", size: 6, value: params.get("min_ms") || "" });
  const body = h("tbody");
  const search = async () => {
    const q = new URLSearchParams({ function: fn.value, status: status.value, min_ms: minMs.value });
    try {
      const r = await api(`/api/traces?${q}`);
      body.replaceChildren(...r.traces.map((t) => h("tr", { class: "click", "data-trace": t.trace_id,
        onclick: () => { location.hash = `#/traces/${t.trace_id}`; } },
        h("td", { text: new Date(t.start_ns / 1e6).toLocaleTimeString() }),
        h("td", { text: t.root }), h("td", { text: t.service }),
        h("td", { text: t.functions.join(", ") }), h("td", { text: t.spans }),
        h("td", { text: ms(t.duration_ms) }),
        h("td", { class: t.status === "ERROR" ? "err" : "ok", text: t.status }))));
    } catch (e) { toast(e.message, "err"); }
  };
  page("Traces", h("div", { class: "row" }, fn, status, minMs,
    h("button", { id: "trace-search", onclick: search, text: "Search" })),
    h("table", { id: "traces-table" }, h("thead", {}, h("tr", {}, ["start", "root", "service",
      "functions", "spans", "duration", "status"].map((c) => h("th", { text: c })))), body));
  await search();
}

async function tracePage(traceId) {
  page(`Trace ${traceId}`, h("p", { class: "muted", text: "waiting for spans…" }));
  let t = null;
  // Spans are exported in batches: a trace just made may need a moment to arrive.
  for (let i = 0; i < 20 && !t; i++) {
    try { t = await api(`/api/traces/${traceId}`); }
    catch (e) { if (!e.message.startsWith("NOT_FOUND")) throw e; await new Promise((r) => setTimeout(r, 500)); }
  }
  if (!t) { page(`Trace ${traceId}`, h("p", { class: "err", text: "no spans of this trace" })); return; }
  const here = location.hash;
  renderTrace(traceId, t);
  // Each process exports its spans on its own schedule: while the trace is young, late
  // spans keep arriving, so poll until the count has been stable for a moment.
  let stable = 0;
  for (let i = 0; i < 16 && stable < 3 && location.hash === here; i++) {
    await new Promise((r) => setTimeout(r, 500));
    let u = null;
    try { u = await api(`/api/traces/${traceId}`); } catch (e) { break; }
    if (u.spans.length > t.spans.length) { t = u; stable = 0; renderTrace(traceId, t); }
    else stable++;
  }
}

function renderTrace(traceId, t) {
  const detail = h("pre", { id: "span-detail", text: "click a span" });
  const total = Math.max(t.duration_ms, 0.001);
  const rows = t.spans.map((v) => {
    const s = v.span;
    const row = h("div", { class: "span-row", "data-span": s.span_id },
      h("div", { class: "span-name", style: `padding-left:${v.depth * 1.2}em`, title: s.name },
        s.name, h("span", { class: "kind", text: `${s.kind.toLowerCase()} · ${s.service}` })),
      h("div", { class: "track" }, h("div", { class: `span-bar ${s.status}`,
        style: `left:${(v.offset_ms / total) * 100}%;width:${(v.duration_ms / total) * 100}%` })),
      h("div", { class: "muted", text: ms(v.duration_ms) }));
    row.addEventListener("click", () => {
      document.querySelectorAll(".span-row.sel").forEach((r) => r.classList.remove("sel"));
      row.classList.add("sel");
      detail.textContent = pretty(s);
    });
    return row;
  });
  const logs = h("div", { id: "trace-logs" });
  page(`Trace ${traceId}`,
    h("p", { class: "muted", text: `${t.spans.length} spans · ${ms(t.duration_ms)} · ` },
      h("a", { href: `#/logs?trace_id=${traceId}`, text: "logs of this trace" })),
    h("div", { id: "waterfall" }, rows), h("h3", { text: "span" }), detail,
    h("h3", { text: "logs" }), logs);
  api(`/api/logs?trace_id=${traceId}`).then((r) => logs.replaceChildren(logTable(r.logs)))
    .catch((e) => toast(e.message, "err"));
}

// ---- Logs ---------------------------------------------------------------------------
function logTable(records) {
  return table(["time", "level", "service", "logger", "message", "trace"], records.map((l) =>
    h("tr", {}, h("td", { text: when(l.ts) }),
      h("td", { class: l.level === "ERROR" ? "err" : l.level === "WARNING" ? "warn" : null, text: l.level }),
      h("td", { text: l.service }), h("td", { text: l.logger }),
      h("td", {}, l.message, l.exc ? h("pre", { text: l.exc }) : null),
      h("td", {}, l.trace_id ? h("a", { href: `#/traces/${l.trace_id}`, text: l.trace_id.slice(0, 8) }) : ""))),
    { id: "logs-table" });
}

async function logsPage(params) {
  const traceId = h("input", { id: "log-trace", placeholder: "trace id", size: 34, value: params.get("trace_id") || "" });
  const level = h("select", { id: "log-level" }, ["", "INFO", "WARNING", "ERROR"].map((l) =>
    h("option", { value: l, text: l || "any level" })));
  const text = h("input", { id: "log-text", placeholder: "text" });
  const out = h("div");
  const search = async () => {
    const q = new URLSearchParams({ trace_id: traceId.value, level: level.value, q: text.value });
    try { out.replaceChildren(logTable((await api(`/api/logs?${q}`)).logs)); }
    catch (e) { toast(e.message, "err"); }
  };
  page("Logs", h("div", { class: "row" }, traceId, level, text,
    h("button", { onclick: search, text: "Filter" })), out);
  await search();
}

// ---- routing ------------------------------------------------------------------------
async function route() {
  cleanup.forEach((f) => f()); cleanup = [];
  const raw = location.hash.replace(/^#\/?/, "") || "workers";
  const [pathPart, query] = raw.split("?");
  const parts = pathPart.split("/");
  const params = new URLSearchParams(query || "");
  const name = parts[0];
  document.querySelectorAll("nav a[data-page]").forEach((a) =>
    a.classList.toggle("active", a.dataset.page === name));
  try {
    if (name === "workers") workersPage();
    else if (name === "functions") await functionsPage(decodeURIComponent(parts[1] || ""), params);
    else if (name === "triggers") await triggersPage(params);
    else if (name === "kv") await kvPage(parts[1], parts.slice(2).join("/"));
    else if (name === "streams") await streamsPage(parts[1]);
    else if (name === "queues") await queuesPage();
    else if (name === "traces" && parts[1]) await tracePage(parts[1]);
    else if (name === "traces") await tracesPage(params);
    else if (name === "logs") await logsPage(params);
    else page("Not found", h("p", { text: `no page ${name}` }));
  } catch (e) {
    page("Error", h("pre", { class: "err", text: e.message }));
  }
}

window.addEventListener("hashchange", route);
route();
api("/api/about").then((a) => {
  const link = document.getElementById("viewer-link");
  link.href = a.viewer;
  link.hidden = false;
}).catch(() => {});
