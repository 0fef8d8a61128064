// DOM helpers. Everything from the server is set as text, never parsed as HTML: memory holds
// what agents saw, which is untrusted. No inline styles or handlers (the page's CSP).

export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = String(v);
    else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

export const main = () => document.getElementById("main");

export function page(title, intro, ...kids) {
  const m = main();
  m.replaceChildren(h("h1", { text: title }), intro ? h("p", { class: "intro", text: intro }) : null, ...kids);
  return m;
}

// An empty page says what fills it and which command does.
export function empty(id, title, lead, command) {
  return h("section", { class: "empty", id },
    h("h2", { text: title }),
    h("p", { text: lead }),
    command ? h("pre", { class: "cmd" }, h("code", { text: command })) : null);
}

export function toast(msg, cls = "") {
  const t = document.getElementById("toast");
  t.textContent = msg;
  t.className = cls;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 6000);
}

export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

// For table cells: "Nov 20, 09:00".
export function short(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

export function ago(iso) {
  if (!iso) return "";
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (!Number.isFinite(s)) return "";
  if (s < 60) return `${Math.max(s, 0)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

// "1 session", "2 sessions"; `many` for the irregular ones.
export function plural(n, one, many) {
  return n === 1 ? one : (many || `${one}s`);
}

export function cut(text, n = 120) {
  const t = String(text || "").replace(/\s+/g, " ").trim();
  return t.length <= n ? t : t.slice(0, n - 1) + "…";
}

export function pretty(v) {
  if (typeof v === "string") return v;
  return JSON.stringify(v, null, 2);
}

export function badge(text, cls = "") {
  return h("span", { class: `badge ${cls}`.trim(), text });
}

export function field(label, input) {
  const id = input.id || `f-${Math.random().toString(36).slice(2)}`;
  input.id = id;
  return h("div", { class: "field" }, h("label", { for: id, text: label }), input);
}

export function select(id, options, current) {
  return h("select", { id }, options.map(([value, text]) =>
    h("option", { value, selected: value === current ? true : null, text })));
}

// snake_case records (search hits carry stored records) read like the camelCase views.
export function camel(obj) {
  if (Array.isArray(obj)) return obj.map(camel);
  if (!obj || typeof obj !== "object") return obj;
  const out = {};
  for (const [k, v] of Object.entries(obj)) out[k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())] = v;
  return out;
}

// The hash route: "#sessions/abc?obs=1" -> { name: "sessions", parts: ["abc"], params }.
export function parseHash(hash) {
  const raw = (hash || "").replace(/^#\/?/, "") || "activity";
  const [path, query] = raw.split("?");
  const parts = path.split("/").map((p) => decodeURIComponent(p));
  return { name: parts[0], parts: parts.slice(1), params: new URLSearchParams(query || "") };
}

export function link(hash, text, attrs = {}) {
  return h("a", { href: hash, ...attrs, text });
}

export const enc = encodeURIComponent;
