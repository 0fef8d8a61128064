"""Lessons in an imported transcript: sentences that state a rule ("always run the
migrations first", "avoid mocking the database"), said by the user or the assistant. They
are saved as lessons (`mem::lesson::save`, which reinforces one already known instead of
copying it), so an imported history teaches what the hooks would have."""

from __future__ import annotations

import re

MAX_PER_SESSION = 20
MIN_CHARS = 20
MAX_CHARS = 220

# A sentence with a rule word in it, up to its end: imperative advice, warnings, notes.
_RULE = re.compile(
    r"[^.!?\n]*\b(?:always|never|don'?t|do not|make sure|remember to|be careful|prefer|avoid|"
    r"must not|should not)\b[^.!?\n]*[.!?\n]?",
    re.IGNORECASE,
)
_MARKED = re.compile(r"\b(?:note|caveat|warning|lesson|gotcha)\s*:\s*[^\n]+", re.IGNORECASE)
_CODEISH = re.compile(r"[`{}<>$;]|==|=>|\bdef \w+\(|\bfunction\s*\(|\breturn \w")
"""Code quoted in the text, not a rule said in words."""


def candidates(texts: list[str]) -> list[str]:
    """Distinct rule sentences of `texts`, in order of appearance, at most MAX_PER_SESSION."""
    out: dict[str, str] = {}
    for text in texts:
        for rx in (_MARKED, _RULE):
            for m in rx.finditer(text):
                sentence = " ".join(m.group(0).split()).strip(" -*•>")
                if not MIN_CHARS <= len(sentence) <= MAX_CHARS or _CODEISH.search(sentence):
                    continue
                out.setdefault(sentence.lower().rstrip(".!?"), sentence)
                if len(out) >= MAX_PER_SESSION:
                    return list(out.values())
    return list(out.values())
