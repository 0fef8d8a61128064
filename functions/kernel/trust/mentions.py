"""Whether a hit is a mention: text that talks ABOUT an attack phrase instead of addressing
the agent with it. Docs about prompt injection, tests of guards and code that builds chat
messages hold the same words as the attacks they describe; holding them costs recall.

The rule, applied in order:
  - inside a fenced code block (``` or ~~~ opening its line, <pre>, <code>) or inline code:
    a mention, whatever it says (it is shown as code, not read as prose);
  - a role marker (`<|im_start|>`, "[INST]") inside any quotes, a multi-line string literal
    (where prompt templates live), a line with template syntax (`{{`, `${`), or a line that
    talks about formats and tokens: a mention;
  - a phrase inside quotes with a sign of discussion on its line or the line before ("such
    as", "payload", "assert", "says"), or a quoted literal in code with such a sign near: a
    mention; a quoted value with none ("description": "AI agents must ...") is not;
  - a phrase after a clause that describes an attack ("a common attack asks the model to",
    "attackers write", "the page says", "an instruction to"): a mention.
An attacker can dress an order up as a mention; one who does has also made it read less
like an order to the model. The classifier counts mentions as `borderline`, not as clean.
"""

from __future__ import annotations

import re

from functions.kernel.trust.rule import ROLE_MARKER

_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)(?<!etc)[.!?](?=\s)|\n")
# A clause that talks about an attack instead of making one. Never inside a URL or a name
# ("cdn.example/x.js" does not discuss examples).
_DISCUSSES = re.compile(
    r"""(?<![./@:\w-])(?:attack\w*|inject\w*|malicious|payloads?|jailbreak\w*|adversar\w*
    |exploit\w*|phrases?\s+like|such\s+as|e\.g\.|for\s+example|examples?|detect\w*|defen[cs]\w*
    |mitigat\w*|classif\w*|guardrails?|red[-\s]team\w*|poison\w*|threat\w*|vulnerab\w*
    |prompt\s+injection)\b""",
    re.X,
)
# "asks the model to", "tricked it into": reported, unless "you" is the one asked
_REPORTED = re.compile(
    r"""\b(?:asks?|asking|asked|tells?|telling|told|instructs?|instructing|instructed|tricks?
    |tricking|tricked|convinces?|convincing|convinced|causes?|causing|caused|makes?|making|gets?
    |getting|forces?|forcing|forced|coax\w*|persuad\w*|manipulat\w*|prompts?|prompting|prompted
    |wants?|wanted|trying|tries|tried|attempts?|attempting|attempted)\s+(?:\w+\s+){0,3}?to\s*$""",
    re.X,
)
# Reported speech and a named order: "the text says ignore ...", "an instruction to ignore".
_QUOTING = re.compile(
    r"""\b(?:says?|said|saying|reads|wrote|writes|contains?|contained|containing)\s*[:,]?\s*$
    |\b(?:instructions?|requests?|commands?|orders?|attempts?)\s+to\s*$""",
    re.X,
)
_SECOND_PERSON = re.compile(r"\byou(?:r|rs|rself)?\b")
_QUOTE_CUES = re.compile(
    r"""(?<![./@:\w-])(?:like|such\s+as|e\.g\.|for\s+example|examples?|phrases?|strings?
    |patterns?|payloads?|attacks?|attackers?|inject\w*|malicious|detect\w*|flag\w*|block\w*
    |filter\w*|classif\w*|assert\w*|expect\w*|tests?|test_\w+|should\s+(?:be\s+)?(?:caught|held
    |flagged|blocked|rejected|detected)|contains?|says?|said|wrote|writes|samples?|fixtures?
    |corpus|cases?|poison\w*|jailbreak\w*|regex\w*|trigger\w*|match\w*|keywords?|quot\w*
    |verbatim|pytest|parametri[sz]e\w*|unittest|describe\(|it\()""",
    re.X,
)
_CUE_REACH = 400
_QUOTE_MAX = 600
_QUOTES = (('"', '"'), ("'", "'"), ("`", "`"), ("“", "”"), ("‘", "’"), ("«", "»"), ("„", "“"))
TEMPLATE = re.compile(r"\{\{|\{%|\$\{|%s|\{(?:role|content|message|messages|prompt|system|user)")
_FORMAT_TALK = re.compile(
    r"\b(?:format\w*|templates?|tokens?|tags?|delimit\w*|markers?|chat\s?ml|syntax|wraps?)\b"
)


def _places(text: str, mark: str, start: int = 0, end: int | None = None) -> list[int]:
    out: list[int] = []
    stop = len(text) if end is None else end
    i = text.find(mark, start, stop)
    while i >= 0:
        out.append(i)
        i = text.find(mark, i + len(mark), stop)
    return out


def _pairs(marks: list[int], width: int) -> list[tuple[int, int]]:
    """Regions between the 1st and 2nd mark, the 3rd and 4th...; an unclosed one is none
    (an attacker's lone ``` must not turn the rest of a page into "code")."""
    return [(a, b + width) for a, b in zip(marks[0::2], marks[1::2], strict=False)]


def _fences(text: str) -> list[tuple[int, int]]:
    """Markdown code fences (a ``` or ~~~ that opens its line) and HTML <pre>/<code>."""
    regions: list[tuple[int, int]] = []
    for mark in ("```", "~~~"):
        at_line_start = [
            i for i in _places(text, mark) if not text[text.rfind("\n", 0, i) + 1 : i].strip()
        ]
        regions += _pairs(at_line_start, 3)
    for tag in ("pre", "code"):
        if f"<{tag}" in text:
            closes = _places(text, f"</{tag}>")
            for a in _places(text, f"<{tag}"):
                b = next((c for c in closes if c > a), -1)
                if b > a:
                    regions.append((a, b))
    return regions


def _literals(text: str) -> list[tuple[int, int]]:
    """Multi-line string literals (Python's triple quotes, JS template literals): where
    prompt templates live. Only role markers are discounted in them: a docstring is prose."""
    regions = _pairs(_places(text, '"""'), 3) + _pairs(_places(text, "'''"), 3)
    if "`" in text:
        ticks = [i for i in _places(text, "`") if text[max(0, i - 1) : i + 2].count("`") == 1]
        regions += [(a, b + 1) for a, b in _pairs(ticks, 0) if "\n" in text[a:b]]
    return regions


def _is_quote(line: str, i: int) -> bool:
    """An apostrophe inside a word (don't, it's) is not a quote."""
    if line[i] not in "'’":
        return True
    before = line[i - 1] if i > 0 else " "
    after = line[i + 1] if i + 1 < len(line) else " "
    return not (before.isalnum() and after.isalnum())


class Lowered:
    """A lower-cased text being scanned and, computed on first need, its code regions."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._fences: list[tuple[int, int]] | None = None
        self._literals: list[tuple[int, int]] | None = None

    def in_fence(self, a: int) -> bool:
        if self._fences is None:
            self._fences = _fences(self.text)
        return any(s <= a < e for s, e in self._fences)

    def in_literal(self, a: int) -> bool:
        if self._literals is None:
            self._literals = _literals(self.text)
        return any(s <= a < e for s, e in self._literals)

    def line(self, a: int) -> tuple[int, int]:
        start = self.text.rfind("\n", 0, a) + 1
        end = self.text.find("\n", a)
        return start, end if end >= 0 else len(self.text)

    def previous_line(self, line_start: int) -> str:
        if line_start == 0:
            return ""
        end = line_start - 1
        while end > 0 and self.text[end - 1] == "\n":
            end -= 1
        return self.text[self.text.rfind("\n", 0, end) + 1 : end]

    def quote_around(self, a: int, b: int) -> tuple[int, int] | None:
        """The quotation (offsets of its opening and closing quote) on the line of a..b that
        holds a..b."""
        ls, le = self.line(a)
        lo, hi = max(ls, a - _QUOTE_MAX), min(le, b + _QUOTE_MAX)
        for open_q, close_q in _QUOTES:
            if open_q == close_q:
                marks = [i for i in _places(self.text, open_q, ls, le) if _is_quote(self.text, i)]
                pairs = list(zip(marks[0::2], marks[1::2], strict=False))
            else:
                o = self.text.rfind(open_q, lo, a)
                c = self.text.find(close_q, b, hi)
                closed_early = o >= 0 and close_q in self.text[o + 1 : a]
                pairs = [(o, c)] if o >= 0 and c >= 0 and not closed_early else []
            for o, c in pairs:
                if o < a and b <= c + 1 and c - o <= _QUOTE_MAX:
                    return o, c
        return None

    def in_inline_code(self, a: int, b: int) -> bool:
        q = self.quote_around(a, b)
        return q is not None and self.text[q[0]] == "`"


def is_mention(t: Lowered, code: str, a: int, b: int) -> bool:
    """Whether the hit of `code` at a..b talks about the phrase rather than using it."""
    if t.in_fence(a):
        return True
    if code == ROLE_MARKER:
        if t.in_literal(a) or t.quote_around(a, b) is not None:
            return True
        ls, le = t.line(a)
        rest = t.text[ls:a] + " " + t.text[b:le]
        return bool(TEMPLATE.search(t.text, ls, le) or _FORMAT_TALK.search(rest))
    return _quoted_in_discussion(t, a, b) or _describes(t, a)


def _quoted_in_discussion(t: Lowered, a: int, b: int) -> bool:
    q = t.quote_around(a, b)
    if q is None:
        return False
    o, c = q
    if t.text[o] == "`":
        return True  # inline code
    ls, le = t.line(a)
    before, after = t.text[ls:o], t.text[c + 1 : le]
    if any(_QUOTE_CUES.search(s) for s in (before, after, t.previous_line(ls))):
        return True
    # A literal in code ("payload = '...'", a list of cases) is data when a test or a
    # guard is near; a value in a config file ("description": "...") is read as it is.
    literal = before.rstrip().endswith(("=", "(", "[", "{", ",", ":")) or after.lstrip().startswith(
        (",", ")", "]", "}", ":", ";")
    )
    if not literal:
        return False
    lo, hi = max(0, o - _CUE_REACH), min(len(t.text), c + _CUE_REACH)
    return bool(_QUOTE_CUES.search(t.text, lo, o) or _QUOTE_CUES.search(t.text, c + 1, hi))


def _describes(t: Lowered, a: int) -> bool:
    """Whether the clause before `a` talks about an attack ("attackers write ...", "asks
    the model to ...") rather than making one."""
    lo = max(0, a - 160)
    ends = [m.end() for m in _SENTENCE_END.finditer(t.text, lo, a)]
    prefix = t.text[ends[-1] if ends else lo : a]
    ls, _le = t.line(a)
    if not prefix.strip(" \t>*-•\"'“") and t.previous_line(ls).rstrip().endswith(":"):
        prefix = t.previous_line(ls) + " " + prefix  # "For example:\n> Ignore ..."
    if _DISCUSSES.search(prefix) or _QUOTING.search(prefix):
        return True
    return _REPORTED.search(prefix) is not None and not _SECOND_PERSON.search(prefix)
