// A word diff of two versions of a memory: the longest common subsequence of their words,
// rendered with <del> and <ins> (which screen readers announce as removed and inserted).
import { h } from "./dom.js";

const MAX_WORDS = 3000;

function words(text) {
  return String(text || "").split(/(\s+)/).filter((w) => w !== "");
}

export function diffWords(older, newer) {
  const a = words(older);
  const b = words(newer);
  if (a.length * b.length > MAX_WORDS * MAX_WORDS / 4) {
    return [["del", a.join("")], ["ins", b.join("")]];
  }
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  const push = (op, w) => {
    const last = out[out.length - 1];
    if (last && last[0] === op) last[1] += w;
    else out.push([op, w]);
  };
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { push("same", a[i]); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) { push("del", a[i]); i++; }
    else { push("ins", b[j]); j++; }
  }
  while (i < n) push("del", a[i++]);
  while (j < m) push("ins", b[j++]);
  return out;
}

export function renderDiff(older, newer) {
  return h("p", { class: "diff" }, diffWords(older, newer).map(([op, text]) =>
    op === "same" ? text : h(op, { text })));
}
