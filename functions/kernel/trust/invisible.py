"""Invisible characters: what `sanitize` removes from everything stored and shown, and
which of them make a text suspect (`hidden_runs`).

Four kinds of character render as nothing, or reorder what is rendered, so that a reader
(the user in the viewer, a reviewer of a diff) does not see what a model reads:
  - Unicode tag characters U+E0000-E007F: each mirrors an ASCII character, so a whole
    sentence can ride invisibly behind a word ("ASCII smuggling");
  - bidi embeddings, overrides and isolates U+202A-202E, U+2066-2069 ("Trojan Source");
  - zero-width characters U+200B-200D, U+2060, U+FEFF: a run of them encodes bits, one
    inside a word hides the word from a keyword search ("ig\u200bnore");
  - variation selectors U+E0100-E01EF: a run after any character encodes bytes.
Each also has a legitimate use, which `sanitize` keeps and `hidden_runs` does not flag: a
zero-width joiner inside an emoji sequence (👩‍💻), a joiner or non-joiner between the letters
of a script that shapes with them (Persian می‌خواهم, Devanagari), one variation selector after
a CJK ideograph (an ideographic variation sequence), a byte-order mark opening a text, a
pair of first-strong isolates around a placeable (what Fluent inserts), and the tag letters
of a subdivision flag (🏴 + gbeng + cancel tag). The flag is the one exception `sanitize`
does not keep: tag characters never reach storage, and the flag degrades to a black flag.

LRM, RLM and ALM (U+200E, U+200F, U+061C) are left alone: they are how RTL text is written
correctly, and they cannot reorder a run of text the way an override can.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import ahocorasick_rs


def _chars(*ranges: tuple[int, int]) -> frozenset[str]:
    return frozenset(chr(c) for lo, hi in ranges for c in range(lo, hi + 1))


_TAGS = _chars((0xE0000, 0xE007F))
_BIDI = _chars((0x202A, 0x202E), (0x2066, 0x2069))
_ZERO_WIDTH = frozenset("\u200b\u2060\ufeff")  # always removed
_JOINERS = frozenset("\u200c\u200d")  # removed unless they join letters or emoji
_SELECTORS = _chars((0xE0100, 0xE01EF))  # removed unless one follows a CJK ideograph
_ALWAYS = _TAGS | _BIDI | _ZERO_WIDTH
INVISIBLE = _ALWAYS | _JOINERS | _SELECTORS
"""Every character this module is about: a caller's own search may look for them."""

# One pass over the UTF-8 bytes finds them all (a few times faster than a regex character
# class over a str, which matters for a 400 KB minified bundle with one stray ZWSP).
_ORDER = sorted(INVISIBLE)
_AC = ahocorasick_rs.BytesAhoCorasick(
    [c.encode() for c in _ORDER], implementation=ahocorasick_rs.Implementation.DFA
)
# The tag letters of a subdivision flag after U+1F3F4 (🏴󠁧󠁢󠁳󠁣󠁴󠁿: "gbsct" + cancel tag).
_FLAG_TAIL = re.compile("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f")
_ZWJ = "\u200d"
_BLACK_FLAG = "\U0001f3f4"
_OVERRIDES = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067")


def _is_emoji(ch: str) -> bool:
    c = ord(ch)
    return (
        0x1F000 <= c <= 0x1FAFF
        or 0x2600 <= c <= 0x27BF
        or 0x2300 <= c <= 0x23FF
        or (0x2B00 <= c <= 0x2BFF)
    )


def _ends_emoji(ch: str) -> bool:
    """Whether a ZWJ may follow `ch` in an emoji sequence: an emoji, or the presentation
    selector (❤️‍🔥) or keycap mark that completes one."""
    return _is_emoji(ch) or ch in "\ufe0f\u20e3"


def _joins(ch: str) -> bool:
    """Letters (and their marks) of the scripts that write with ZWJ/ZWNJ: Arabic, Syriac,
    N'Ko, Persian forms, the Indic scripts, Myanmar, Khmer, Mongolian."""
    c = ord(ch)
    return (
        0x0600 <= c <= 0x08FF
        or 0x0900 <= c <= 0x0DFF
        or 0x1000 <= c <= 0x109F
        or 0x1780 <= c <= 0x18AF
        or 0xFB50 <= c <= 0xFDFF
        or 0xFE70 <= c <= 0xFEFC
    )


def _is_ideograph(ch: str) -> bool:
    c = ord(ch)
    return 0x3400 <= c <= 0x9FFF or 0xF900 <= c <= 0xFAFF or 0x20000 <= c <= 0x3FFFF


def _kept(s: str, start: int, end: int) -> bool:
    """Whether the joiner run or selector at s[start:end] is one `sanitize` keeps. Only its
    neighbours decide, and a kept character's neighbours are never removed: that is what
    makes `sanitize` idempotent."""
    if end - start != 1 or start == 0:
        return False
    ch, before = s[start], s[start - 1]
    if ch not in _JOINERS:  # a variation selector
        return _is_ideograph(before)
    if end == len(s):
        return False
    after = s[end]
    if ch == _ZWJ and _ends_emoji(before) and _is_emoji(after):
        return True
    return _joins(before) and _joins(after)


def places(text: str) -> list[int]:
    """The (character) offsets of every invisible character in `text`, in order."""
    if text.isascii():
        return []
    # surrogatepass: a lone surrogate (JSON can carry one) is text, not an error
    data = text.encode("utf-8", "surrogatepass")
    out: list[int] = []
    chars = byte = 0
    for _i, start, _end in _AC.find_matches_as_indexes(data):
        chars += len(data[byte:start].decode("utf-8", "surrogatepass"))
        byte = start
        out.append(chars)
    return out


def _runs(at: list[int]) -> Iterator[tuple[int, int]]:
    """Consecutive offsets as (start, end) spans."""
    i = 0
    while i < len(at):
        j = i
        while j + 1 < len(at) and at[j + 1] == at[j] + 1:
            j += 1
        yield at[i], at[j] + 1
        i = j + 1


def _cut(text: str, at: list[int]) -> str:
    """`text` without the characters at the (sorted) offsets `at`."""
    parts: list[str] = []
    keep_from = 0
    for i in at:
        parts.append(text[keep_from:i])
        keep_from = i + 1
    parts.append(text[keep_from:])
    return "".join(parts)


def strip_invisible(text: str, found: list[int] | None = None) -> tuple[str, list[int]]:
    """`sanitize(text)` and the (sorted) offsets of `text` it removed, to map a place in the
    clean text back to the original (`original_index`); `found`: `places(text)` if known."""
    found = places(text) if found is None else found
    if not found:
        return text, []
    removed = [p for p in found if text[p] in _ALWAYS]
    first = _cut(text, removed)
    # The joiners and selectors, where they are once the others are gone: only their
    # neighbours there decide whether they stay (`_kept`).
    shift = 0
    rest: list[int] = []
    for p in found:
        if text[p] in _ALWAYS:
            shift += 1
        else:
            rest.append(p - shift)
    dropped: list[int] = []
    for a, b in _runs(rest):
        for start, end in _groups(first, a, b):
            if not _kept(first, start, end):
                dropped.extend(range(start, end))
    if not dropped:
        return first, removed
    return _cut(first, dropped), sorted(removed + _originals(dropped, removed))


def _groups(s: str, a: int, b: int) -> Iterator[tuple[int, int]]:
    """A run of joiners and selectors as `sanitize` judges it: each maximal run of joiners
    as one, each selector alone."""
    i = a
    while i < b:
        j = i + 1
        if s[i] in _JOINERS:
            while j < b and s[j] in _JOINERS:
                j += 1
        yield i, j
        i = j


def _originals(at: list[int], removed: list[int]) -> list[int]:
    """`original_index` of each of the (sorted) offsets `at`, in one walk."""
    out: list[int] = []
    k = 0
    for i in at:
        while k < len(removed) and removed[k] <= i + k:
            k += 1
        out.append(i + k)
    return out


def original_index(i: int, removed: list[int]) -> int:
    """The offset in the original text of offset `i` of the text left after removing the
    (sorted) offsets `removed`."""
    return _originals([i], removed)[0]


def sanitize(text: str) -> str:
    """`text` without the invisible characters a reader cannot see (see the module's doc)."""
    if text.isascii():  # most text: nothing to look for
        return text
    return strip_invisible(text)[0]


def sanitize_value(value: Any) -> Any:
    """`sanitize` every string inside a JSON-like value (dict keys included), and, in a
    string that holds JSON text (a tool's output often does), the escapes that spell the
    characters `sanitize` removes. Run it before `scrub_value`: a zero-width character inside
    a key ("sk-ant-api\u200b03-...") hides it from the secret patterns, not from a model."""
    if isinstance(value, str):
        return _sanitize_string(value)
    if isinstance(value, dict):
        return {_sanitize_string(str(k)): sanitize_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sanitize_value(v) for v in value]
    return value


# JSON escapes of what `sanitize` removes, inside a JSON text: whoever decodes it (the
# compressor reads a tool's JSON output) would get the characters back. A run of such
# escapes loses what `sanitize` always removes (tag characters, as surrogate pairs; bidi
# embeddings, overrides and isolates; ZWSP, word joiner, BOM), then its joiners and
# variation selectors unless one alone is left (it may be meant). An escape counts only
# after an even run of backslashes (`\\u202e` in JSON is the text "\u202e").
_ALWAYS_HEX = (
    r"200[bB]|2060|[fF][eE][fF][fF]|202[a-eA-E]|206[6-9]|[dD][bB]40\\u[dD][cC][0-7][0-9a-fA-F]"
)
_OTHER_HEX = r"200[cCdD]|[dD][bB]40\\u[dD][dD][0-9a-eA-E][0-9a-fA-F]"
_ESCAPE = rf"\\u(?:{_ALWAYS_HEX}|{_OTHER_HEX})"
_ESCAPED_RUN = re.compile(rf"((?:^|[^\\])(?:\\\\)*)((?:{_ESCAPE})+)")
_ALWAYS_ESCAPE = re.compile(rf"\\u(?:{_ALWAYS_HEX})")
_ONE_ESCAPE = re.compile(_ESCAPE)
_LOOKS_JSON = re.compile(r"\s*[\[{]")


def _unescaped_run(m: re.Match[str]) -> str:
    rest = _ALWAYS_ESCAPE.sub("", m.group(2))
    return m.group(1) + (rest if len(_ONE_ESCAPE.findall(rest)) == 1 else "")


def _sanitize_string(text: str) -> str:
    text = sanitize(text)
    if "\\u" in text and _LOOKS_JSON.match(text):
        text = _ESCAPED_RUN.sub(_unescaped_run, text)
    return text


def tag_text(run: str) -> str:
    """The ASCII a run of tag characters spells (U+E0020-E007E mirror U+0020-007E)."""
    return "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)


_STRAYS_ALLOWED = 2
"""Single zero-width characters between words (a pasted ZWSP, a chat app's @-escape) that a
text may hold before they count as a hidden channel."""


def hidden_runs(text: str, found: list[int] | None = None) -> list[tuple[int, int]]:
    """The runs of invisible characters in `text` that hide something: any tag character
    outside a subdivision flag, a bidi embedding or override (or an isolate left open), a
    run of zero-width characters or selectors, one inside a word of Latin letters or
    digits, or more than a couple of stray ones. Over the whole text, however long;
    `found`: `places(text)` if known."""
    found = places(text) if found is None else found
    if not found:
        return []
    hiding: list[tuple[int, int]] = []
    strays: list[tuple[int, int]] = []
    isolates_balanced = sum(text[p] == "\u2068" for p in found) == sum(
        text[p] == "\u2069" for p in found
    )
    for a, b in _runs(found):
        run = text[a:b]
        if any(c in _TAGS for c in run):
            if not (a > 0 and text[a - 1] == _BLACK_FLAG and _FLAG_TAIL.fullmatch(run)):
                hiding.append((a, b))
        elif any(c in _OVERRIDES for c in run) or (
            not isolates_balanced and ("\u2068" in run or "\u2069" in run)
        ):
            hiding.append((a, b))
        elif all(c in "\u2068\u2069" for c in run) or (a == 0 and run == "\ufeff"):
            continue
        elif b - a > 1:
            hiding.append((a, b))
        elif _kept(text, a, b):
            continue
        elif 0 < a and b < len(text) and _latin_word(text[a - 1]) and _latin_word(text[b]):
            hiding.append((a, b))
        else:
            strays.append((a, b))
    if len(strays) > _STRAYS_ALLOWED:
        hiding.extend(strays)
    return sorted(hiding)


def _latin_word(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()
