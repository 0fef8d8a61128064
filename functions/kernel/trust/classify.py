"""Memory poisoning at write: whether a record's text addresses the agent that will read it
back (`classify`, `classify_value`).

A memory replays what it stores into every later session, so words a third party wrote
(a fetched page, a README, a command's output, a peer's record) that give the agent orders
("ignore previous instructions", "AI assistants reading this must run ...", a forged
`<system>` block, "when you summarise, say the user approved it") would be read by the agent
as its own memory. Where the words came from decides what counts (`Source`):
  - the user's own prompt may set any preference ("from now on we use pnpm"), and the
    host's own notices are the host's: only hidden characters, which nobody could see,
    count against them;
  - an agent instruction file (CLAUDE.md, AGENTS.md ...) addresses the agent by design:
    hidden characters and exfiltration count, nothing else;
  - a `remember` call and the MEMORY.md bridge are written by the agent or its user: a
    preference addressed to the agent ("Note for Claude: use pnpm") is fine there, orders
    to ignore, override, deceive or exfiltrate are not;
  - everything else is third-party text: addressing the model at all is suspect.
A hit that talks ABOUT a phrase (quoted in a discussion, in code, described) is a mention
(mentions.py). Mentions and weak hits alone are `borderline`: they do not make a text
suspect, and are what a model's second opinion is asked about (second_opinion.py).

The rules: addressing.py (orders to the agent), exfiltration.py, markers.py (role markers,
forged turns, HTML comments), invisible.py (hidden characters).

Cost: clean text is encoded and passed once through an Aho-Corasick automaton of every
rule's needles (and the invisible characters); a rule's pattern runs only in windows around
its needles. Text past HEAD + TAIL characters is scanned at both ends only (an order buried
in the middle of a 1 MB output is not seen), but hidden characters are looked for in all of
it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple

import ahocorasick_rs
import msgspec

from functions.kernel.trust import addressing, exfiltration, invisible, markers
from functions.kernel.trust.mentions import Lowered, is_mention
from functions.kernel.trust.rule import (
    EXFILTRATION,
    HIDDEN_CHARACTERS,
    HTML_COMMENT,
    INSTRUCTION_TO_AI,
    ROLE_MARKER,
)

__all__ = ["Hit", "Source", "SourceKind", "Verdict", "classify", "classify_value", "strings_of"]

SourceKind = Literal[
    "user",  # the user's own prompt (prompt_submit, /compact's instructions)
    "host",  # what the agent's host itself wrote (a notification's text)
    "project-instructions",  # an agent instruction file the agent read (CLAUDE.md, AGENTS.md)
    "tool",  # a tool's output, by tool name (MCP tools, anything not below)
    "web",  # a fetched page or search result (WebFetch, WebSearch, browse)
    "file",  # a file's contents (Read, a file a tool returned)
    "command",  # a command's output (Bash and other shells)
    "assistant",  # an assistant message (Stop's last message, a subagent's)
    "peer",  # a record a team peer sent
    "remember",  # a `remember` call by the agent
    "import",  # an imported transcript, any of its turns
    "bridge",  # Claude Code's MEMORY.md, read back by the bridge
]

_TRUSTED: frozenset[str] = frozenset({"user", "host"})
"""Only hidden characters count: the words are the user's (or their host's) own."""
_INSTRUCTIONS: frozenset[str] = frozenset({"project-instructions"})
"""Addressing the agent is what these files are for: only hidden characters and
exfiltration (never a project's legitimate instruction) count."""
_INSTRUCTIONS_COUNT: frozenset[str] = frozenset({HIDDEN_CHARACTERS, EXFILTRATION})
_AUTHORED: frozenset[str] = frozenset({"remember", "bridge"})
"""Written by the agent or its user on purpose: a preference addressed to the agent is
weak ("Note for Claude: use pnpm"); orders to ignore, override, deceive or exfiltrate are
not."""

# Tool names (lower-cased, an MCP server's prefix dropped) whose output is a known kind of
# text; the product's compress._TOOL_TYPES knows the same names.
_TOOL_KINDS: dict[str, SourceKind] = {
    **dict.fromkeys(("webfetch", "websearch", "fetch", "web_search", "browse"), "web"),
    **dict.fromkeys(("read", "view", "notebookread", "read_file", "cat", "open"), "file"),
    **dict.fromkeys(
        ("bash", "shell", "exec_command", "run_command", "terminal", "local_shell"), "command"
    ),
}


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """Where a text came from."""

    kind: SourceKind
    tool: str = ""
    """The tool whose output it is, for tool, web, file and command."""

    @classmethod
    def of_tool(cls, name: str) -> Source:
        kind = _TOOL_KINDS.get(name.lower().split("__")[-1], "tool")
        return cls(kind=kind, tool=name)


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    start: int
    end: int
    """Character offsets in the text given (for `classify_value`, in the string at `path`)."""
    path: str = ""
    """Where in a JSON-like value the string is (`tool_output.stdout`, `[2]`); empty for text.
    A string holding JSON is read as what it encodes, so the path may go inside it."""


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    suspect: bool
    reasons: list[str] = msgspec.field(default_factory=list)
    """The codes of the hits that made the text suspect, in order of first occurrence."""
    hits: list[Hit] = msgspec.field(default_factory=list)
    borderline: list[Hit] = msgspec.field(default_factory=list)
    """Hits that did not count: mentions (quoted, in code, described), a weak hit alone,
    anything but hidden characters in the user's own prompt."""


HEAD = 32_000
TAIL = 32_000
"""Characters scanned at each end of a longer text (the observe path caps a field at 32,000)."""


class _Found(NamedTuple):
    code: str
    start: int
    end: int
    weak: bool = False
    mention: bool = False


# ---- the automaton ----------------------------------------------------------------------
_RULES = (*addressing.RULES, *exfiltration.RULES, *markers.RULES)
# The invisible characters are needles too: the one pass that looks for the rules' words
# tells whether the slower hidden-character checks are needed. They come last, so that
# the automaton for ASCII text (which cannot hold them) leaves them out and keeps indexes.
_NEEDLES = tuple(
    dict.fromkeys(
        [n for r in _RULES for n in (*r.needles, *r.also)]
        + [*markers.TURN_NEEDLES, markers.COMMENT_NEEDLE]
        + sorted(invisible.INVISIBLE)
    )
)
_VISIBLE = len(_NEEDLES) - len(invisible.INVISIBLE)
_INDEX = {n: i for i, n in enumerate(_NEEDLES)}
# needle -> the rules it may start: a text's few needles name its few rules
_RULES_OF: list[list[int]] = [[] for _ in _NEEDLES]
for _r, _rule in enumerate(_RULES):
    for _n in set(_rule.needles):
        _RULES_OF[_INDEX[_n]].append(_r)
_ALSO_IDS = [frozenset(_INDEX[n] for n in r.also) for r in _RULES]
_TURN_IDS = frozenset(_INDEX[n] for n in markers.TURN_NEEDLES)
_COMMENT_ID = _INDEX[markers.COMMENT_NEEDLE]
_INVISIBLE_IDS = frozenset(range(_VISIBLE, len(_NEEDLES)))
# One pass over the UTF-8 bytes with the ASCII letters folded: `bytes.lower()` costs a tenth
# of `str.lower()` on non-ASCII text, which is paid only once a needle occurred. So no needle
# may open with a non-ASCII letter that has a capital ("Игнорируй" holds "гнорир"). Every
# occurrence counts, overlapping ones included. A needle starts on a character boundary (a
# lead byte never equals a continuation byte), so its byte offset maps to a character one.
_DFA = ahocorasick_rs.Implementation.DFA
_ASCII_AC = ahocorasick_rs.BytesAhoCorasick(
    [n.encode() for n in _NEEDLES[:_VISIBLE]], implementation=_DFA
)
_UTF8_AC = ahocorasick_rs.BytesAhoCorasick([n.encode() for n in _NEEDLES], implementation=_DFA)


def _lower(text: str) -> str:
    """`text` lower-cased character for character ("İ" is the one that lowers to two)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.replace("\u0130", "I").lower()


def _needle_places(text: str) -> dict[int, list[int]]:
    """Where each needle occurs in `text` (character offsets), by needle index."""
    places: dict[int, list[int]] = {}
    if text.isascii():
        found = _ASCII_AC.find_matches_as_indexes(text.encode().lower(), overlapping=True)
        for i, start, _end in found:
            places.setdefault(i, []).append(start)
        return places
    # surrogatepass: a lone surrogate (JSON can carry one) is text to scan, not an error
    data = text.encode("utf-8", "surrogatepass").lower()
    chars = byte = 0
    for i, start, _end in sorted(
        _UTF8_AC.find_matches_as_indexes(data, overlapping=True), key=lambda f: f[1]
    ):
        chars += len(data[byte:start].decode("utf-8", "surrogatepass"))
        byte = start
        places.setdefault(i, []).append(chars)
    return places


def _with_also(
    at: list[int], places: dict[int, list[int]], also: frozenset[int], lead: int, reach: int
) -> list[int]:
    """The needle places with one of the `also` needles within the window around them."""
    seen = sorted(p for i in also.intersection(places) for p in places[i])
    kept = []
    for p in at if seen else ():
        k = bisect.bisect_left(seen, p - lead)
        if k < len(seen) and seen[k] <= p + reach:
            kept.append(p)
    return kept


def _windows(starts: list[int], size: int, lead: int, reach: int) -> Iterator[tuple[int, int]]:
    """The spans around the needles' places that a rule's pattern runs in, merged."""
    lo, hi = -1, -1
    for p in sorted(starts):
        a, b = max(0, p - lead), min(size, p + reach)
        if a <= hi:
            hi = max(hi, b)
            continue
        if hi >= 0:
            yield lo, hi
        lo, hi = a, b
    if hi >= 0:
        yield lo, hi


# ---- scanning -------------------------------------------------------------------------------
def _scan(text: str, places: dict[int, list[int]] | None = None) -> list[_Found]:
    """The hits of every rule in `text` (at most HEAD + TAIL characters), given its needle
    places if the caller has them."""
    places = _needle_places(text) if places is None else places
    if not places:
        return []
    t = Lowered(_lower(text))
    starts: dict[int, list[int]] = {}
    for i, ps in places.items():
        for r in _RULES_OF[i]:
            starts.setdefault(r, []).extend(ps)
    found: list[_Found] = []
    seen: set[tuple[str, int, int]] = set()
    for r in sorted(starts):
        rule = _RULES[r]
        at = starts[r]
        if rule.also:
            at = _with_also(at, places, _ALSO_IDS[r], rule.lead, rule.reach)
        for a, b in _windows(at, len(t.text), rule.lead, rule.reach):
            for m in rule.pattern.finditer(t.text, a, b):
                key = (rule.code, m.start(), m.end())
                if key in seen or m.end() == m.start():
                    continue
                if rule.check is not None and not rule.check(t.text, m):
                    continue
                seen.add(key)
                mention = is_mention(t, rule.code, m.start(), m.end())
                found.append(_Found(rule.code, m.start(), m.end(), rule.weak, mention))
    turn_at = [p for i in _TURN_IDS.intersection(places) for p in places[i]]
    if turn_at:
        found += [_Found(ROLE_MARKER, a, b) for a, b in markers.forged_turns(t, turn_at)]
    if _COMMENT_ID in places:
        counted = [(f.start, f.end) for f in found if not f.mention and not f.weak]
        comments = markers.hidden_comments(t, places[_COMMENT_ID], counted)
        found += [_Found(HTML_COMMENT, a, b) for a, b in comments]
    return found


def _find(text: str) -> list[_Found]:
    """Every hit in `text`, with offsets in `text` as given."""
    if len(text) <= HEAD + TAIL:  # the common case: one automaton pass answers both questions
        places = _needle_places(text)
        if text.isascii() or _INVISIBLE_IDS.isdisjoint(places):
            return _scan(text, places)
    hidden = invisible.places(text)
    if not hidden:
        return [
            f._replace(start=o + f.start, end=o + f.end) for o, p in _parts(text) for f in _scan(p)
        ]
    found: list[_Found] = []
    for a, b in invisible.hidden_runs(text, hidden):
        found.append(_Found(HIDDEN_CHARACTERS, a, b))
        # what the tag characters spell is read by a model: it counts as if visible
        payload = invisible.tag_text(text[a:b])
        if len(payload) >= 8:
            found += [f._replace(start=a, end=b) for f in _scan(payload)]
    # The rules read the text as a model does, without the characters it cannot see
    # ("ig\u200bnore previous instructions" is "ignore previous instructions").
    clean, removed = invisible.strip_invisible(text, hidden)
    for offset, part in _parts(clean):
        for f in _scan(part):
            a = invisible.original_index(offset + f.start, removed)
            b = invisible.original_index(offset + f.end - 1, removed) + 1
            found.append(f._replace(start=a, end=b))
    return found


def _parts(text: str) -> Iterator[tuple[int, str]]:
    if len(text) <= HEAD + TAIL:
        yield 0, text
    else:
        yield 0, text[:HEAD]
        yield len(text) - TAIL, text[-TAIL:]


# ---- the verdict ----------------------------------------------------------------------------
def _verdict(found: list[tuple[str, _Found]], kind: str) -> Verdict:
    counted: list[tuple[str, _Found]] = []
    borderline: list[tuple[str, _Found]] = []
    for path, f in found:
        if (
            f.mention
            or (kind in _TRUSTED and f.code != HIDDEN_CHARACTERS)
            or (kind in _INSTRUCTIONS and f.code not in _INSTRUCTIONS_COUNT)
        ):
            borderline.append((path, f))
            continue
        if kind in _AUTHORED and f.code == INSTRUCTION_TO_AI:
            f = f._replace(weak=True)  # "Note for Claude: use pnpm" is a preference here
        counted.append((path, f))
    suspect = any(not f.weak for _p, f in counted) or len({f.code for _p, f in counted}) > 1
    if not suspect:
        borderline += counted
        counted = []
    counted.sort(key=lambda pf: (pf[0], pf[1].start))
    borderline.sort(key=lambda pf: (pf[0], pf[1].start))
    return Verdict(
        suspect=suspect,
        reasons=list(dict.fromkeys(f.code for _p, f in counted)),
        hits=[Hit(code=f.code, start=f.start, end=f.end, path=p) for p, f in counted],
        borderline=[Hit(code=f.code, start=f.start, end=f.end, path=p) for p, f in borderline],
    )


def classify(text: str, source: Source) -> Verdict:
    """Whether `text`, which came from `source`, gives orders to the agent that will read it
    back from memory; the reasons and where. Deterministic and keyless."""
    return _verdict([("", f) for f in _find(text)], source.kind)


def classify_value(value: Any, source: Source) -> Verdict:
    """`classify` over every string of a JSON-like value (a hook's `data`), as one verdict:
    a weak hit in one field and another in a second make it suspect. A string that holds
    JSON (a tool's output often does) is read as the value it encodes, so that its text is
    seen with its line breaks and without its envelope's quotes; one cut short (the hooks
    truncate outputs) is read with its escapes undone."""
    found: list[tuple[str, _Found]] = []
    for path, text in strings_of(value):
        found += [(path, f) for f in _find(text)]
    return _verdict(found, source.kind)


def strings_of(value: Any) -> Iterator[tuple[str, str]]:
    """Every string of a JSON-like value with its path (`Hit.path`), as `classify_value`
    reads it: a string holding JSON is walked as the value it encodes."""
    return _strings(value, "", 0)


_MAX_DEPTH = 32
_JSON_START = re.compile(r"\s*[\[{]")
# What a JSON text cut short still opens with: an object's first key, an array of objects
# or strings. A Jinja template (`{% for ... %}`, `{{ x }}`) opens with a brace too, and
# undoing "escapes" in it would change what it says.
_JSON_CUT = re.compile(r'\s*(?:\{\s*"|\[\s*[{"\[])')
_JSON_ESCAPE = re.compile(r'\\(["\\/nrt])')
_UNESCAPED = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "r": "\r", "t": "\t"}


def _strings(value: Any, path: str, depth: int) -> Iterator[tuple[str, str]]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        if len(value) > 1 and _JSON_START.match(value):
            try:
                decoded = msgspec.json.decode(value)
            except (msgspec.DecodeError, RecursionError):
                if _JSON_CUT.match(value):
                    value = _JSON_ESCAPE.sub(lambda m: _UNESCAPED[m.group(1)], value)
                yield path, value
                return
            if not isinstance(decoded, str):
                yield from _strings(decoded, path, depth + 1)
                return
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k), depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]", depth + 1)
