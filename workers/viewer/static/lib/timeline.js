// One timeline event (a prompt, a tool call, its result or error, a response), readable:
// tool input as indented JSON, output as it was printed.
import { badge, h, pretty, when } from "./dom.js";

export const KIND_LABELS = {
  prompt: "prompt", response: "response", tool_call: "tool call", tool_result: "result",
  tool_error: "error", session_start: "session start", session_end: "session end", hook: "event",
};

export function offset(ms) {
  const s = Math.floor(ms / 1000);
  const m = Math.floor(s / 60);
  return `${m}:${String(s % 60).padStart(2, "0")}`;
}

export function eventBody(ev) {
  const parts = [];
  if (ev.body) parts.push(h("pre", { class: "body", text: ev.body }));
  if (ev.toolInput !== undefined && ev.toolInput !== null && ev.toolInput !== "") {
    parts.push(h("h4", { text: "input" }), h("pre", { class: "tool-input", text: pretty(ev.toolInput) }));
  }
  if (ev.toolOutput) {
    parts.push(h("h4", { text: ev.kind === "tool_error" ? "error" : "output" }),
      h("pre", { class: `tool-output${ev.kind === "tool_error" ? " err" : ""}`, text: ev.toolOutput }));
  }
  return parts;
}

export function eventHeader(ev) {
  return h("p", { class: "event-head" },
    badge(KIND_LABELS[ev.kind] || ev.kind, `kind-${ev.kind}`),
    h("strong", { class: "label", text: ev.label }),
    h("time", { class: "muted", datetime: ev.ts, text: ` ${when(ev.ts)} (+${offset(ev.offsetMs)})` }));
}
