"""Synthetic markdown compression, without any LLM: prose loses filler words and extra
whitespace; headings, URLs, inline code and fenced code blocks are kept byte for byte, and
a result that does not keep them is refused (the same checks upstream applies to an LLM's
output)."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_URL = re.compile(r"https?://[^\s)>\]]+")
_CODE_BLOCK = re.compile(r"```[\s\S]*?```")
_KEEP = re.compile(r"`[^`]*`|https?://[^\s)>\]]+|\[[^\]]*\]\([^)]*\)")
_PHRASES = [
    (re.compile(r"\bit is (?:important|worth) (?:to note|noting) that\s+", re.I), ""),
    (re.compile(r"\b(?:please )?note that\s+", re.I), ""),
    (re.compile(r"\bin order to\b", re.I), "to"),
    (re.compile(r"\bdue to the fact that\b", re.I), "because"),
    (re.compile(r"\bat this point in time\b", re.I), "now"),
    (re.compile(r"\bis able to\b", re.I), "can"),
    (
        re.compile(
            r"\b(?:basically|actually|really|very|simply|just|quite|rather|"
            r"essentially|literally|definitely)\s+",
            re.I,
        ),
        "",
    ),
]
_SPACES = re.compile(r"[ \t]{2,}")


def headings(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if _HEADING.match(ln)]


def urls(text: str) -> list[str]:
    return sorted(set(_URL.findall(text)))


def code_blocks(text: str) -> list[str]:
    return _CODE_BLOCK.findall(text)


def problems(original: str, compressed: str) -> list[str]:
    """What a compression lost that it must keep (empty: it kept everything)."""
    out = [f"missing heading: {h}" for h in headings(original) if h not in headings(compressed)]
    if urls(original) != urls(compressed):
        out.append("url set changed")
    if code_blocks(original) != code_blocks(compressed):
        out.append("code blocks changed")
    return out


def _prose(line: str) -> str:
    body = line.lstrip()
    parts: list[str] = [line[: len(line) - len(body)]]  # indentation nests lists: kept
    line = body
    last = 0
    for m in _KEEP.finditer(line):
        parts.append(_shorten(line[last : m.start()]))
        parts.append(m.group(0))
        last = m.end()
    parts.append(_shorten(line[last:]))
    out = "".join(parts).rstrip()
    lead = parts[0]
    rest = out[len(lead) :]
    if body[:1].isupper() and rest[:1].islower():  # a sentence lost its first words
        out = lead + rest[:1].upper() + rest[1:]
    return out


def _shorten(text: str) -> str:
    for pattern, repl in _PHRASES:
        text = pattern.sub(repl, text)
    return _SPACES.sub(" ", text)


def compress_markdown(text: str) -> str:
    out: list[str] = []
    fence: str | None = None
    blank = False
    for line in text.splitlines():
        if fence is not None:
            out.append(line)
            if line.startswith(fence):
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            out.append(line)
            blank = False
            continue
        if not line.strip():
            if not blank and out:
                out.append("")
            blank = True
            continue
        blank = False
        out.append(line.rstrip() if _HEADING.match(line) else _prose(line))
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"
