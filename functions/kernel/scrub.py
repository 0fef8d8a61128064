"""Secret scrubbing: every write path passes text through `scrub` before it is hashed,
stored or indexed, so a secret never reaches KV, the event stream or an index.

Three layers run in order, each on what the one before left:
  1. our own shapes: whole blocks (<private>, PEM keys), things that embed other shapes
     (URLs with credentials, bearer headers, JWTs), the common vendor keys;
  2. the mirrored rule set (secret_rules.json: gitleaks' rules, a few of ours): ~200
     provider shapes, each filtered as gitleaks filters (entropy, allowlists);
  3. `name = value` assignments and `--password value` flags for secret-looking names,
     however the names chain (`aws_secret: aws_secret_access_key = VALUE`).
A match becomes `[REDACTED:<kind>]`, the kind being our rule's name or the rule set's id.

Most text holds no secret: one Aho-Corasick pass over the lower-cased text finds every
needle (each rule's hints, anchors or keywords) and a rule runs only if one of its needles
occurred; a rule-set rule with anchors is tried only at the places they occurred.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import ahocorasick_rs

from functions.kernel import secret_rules

_VALUE = r"""[^\s"',;&}{\]\[]{4,}"""
_SEP = r"(?:=>|:=|[:=])"
_LINK = rf"""(?:"[^"\n]*"|'[^'\n]*'|{_VALUE})"""
# (kind, pattern, group to replace: 0 = whole match, -1 = the alternative that matched,
#  needles: substrings of the lower-cased text that every match holds, and whether every
#  match starts with one of them, so that the rule is tried only where one starts)
_Table = list[tuple[str, re.Pattern[str], int, tuple[str, ...], bool]]
_OWN_FIRST: _Table = [
    ("private", re.compile(r"<private>.*?(?:</private>|\Z)", re.S), 0, ("<private",), True),
    (
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        0,
        ("private key",),
        False,
    ),
    # scheme://user:password@host -> keep the scheme and host, drop the credentials
    ("url_credentials", re.compile(r"://([^\s/@:'\"<>]+:[^\s/@'\"<>]+)(?=@)"), 1, ("://",), True),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        0,
        ("eyj",),
        True,
    ),
    ("bearer", re.compile(r"\bbearer\s+([a-z0-9._~+/=-]{12,})"), 1, ("bearer",), True),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"), 0, ("sk-ant-",), True),
    (
        "openai_key",
        re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        0,
        ("sk-",),
        True,
    ),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), 0, ("github_pat_",), True),
    (
        "github_token",
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
        0,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        True,
    ),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0, ("akia", "asia"), True),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0, ("aiza",), True),
    ("slack_token", re.compile(r"\bxox[abpors]-[A-Za-z0-9-]{10,}"), 0, ("xox",), True),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0, ("glpat-",), True),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), 0, ("npm_",), True),
]
_OWN_LAST: _Table = [
    # name = value / "name": "value" / name: value, for secret-looking names: a quoted
    # value is taken whole (spaces and all), and a chain `name: other_name = value` whole
    # from its first link to its last, so no number of names can leave the value behind
    (
        "secret_assignment",
        re.compile(
            rf"""(?x)
            (?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|client[_-]?secret|
               auth[_-]?token|access[_-]?token|refresh[_-]?token|token|secret|
               passwd|password|passphrase|pwd|private[_-]?key|credentials?)
            \\?["']?\s*{_SEP}\s*
            (?!\\?["']?(?:true|false|null|none)\b)
            (?:({_LINK}(?:[ \t]*{_SEP}[ \t]*{_LINK})+)
              |\\"([^"\\\n]{{1,300}})\\"
              |"([^"\n]{{1,300}})"
              |'([^'\n]{{1,300}})'
              |({_VALUE})
            )
            """
        ),
        -1,
        (
            "api",
            "access",
            "secret",
            "client",
            "auth",
            "refresh",
            "token",
            "passw",
            "passp",
            "pwd",
            "private",
            "credential",
        ),
        True,
    ),
    # --password hunter2, --api-key "x y": a flag naming a secret, its value after a space
    # (the look-behind follows the "--" so that the search can look for "--" alone)
    (
        "secret_flag",
        re.compile(
            r"""--(?<![\w-]--)(?:[a-z0-9]+[_-])*(?:password|passwd|passphrase|token|secret|
            api[_-]?key|access[_-]?key)[ \t]+(?!-)([^\s"']{4,}|"[^"\n]+"|'[^'\n]+')""",
            re.X,
        ),
        1,
        ("--",),
        True,
    ),
]

# These rules are written in lower case and matched against the lower-cased text, with the
# spans applied to the original: Python's IGNORECASE alternations cost ~25x more.
_ON_LOWER = frozenset({"private", "bearer", "secret_assignment", "secret_flag"})
RULE_SET = secret_rules.load()


def _needles_of(rule: secret_rules.Rule) -> tuple[str, ...]:
    return rule.anchors or rule.keywords


_NEEDLES = tuple(
    dict.fromkeys(
        [h for t in (_OWN_FIRST, _OWN_LAST) for _k, _p, _g, hs, _a in t for h in hs]
        + [n for r in RULE_SET.rules for n in _needles_of(r)]
    )
)
_INDEX = {n: i for i, n in enumerate(_NEEDLES)}


class _Own:
    __slots__ = ("anchored", "group", "kind", "needles", "on_lower", "pattern")

    def __init__(
        self,
        kind: str,
        pattern: re.Pattern[str],
        group: int,
        hints: tuple[str, ...],
        anchored: bool,
    ) -> None:
        self.kind, self.pattern, self.group, self.anchored = kind, pattern, group, anchored
        self.needles = frozenset(_INDEX[h] for h in hints)
        self.on_lower = kind in _ON_LOWER


class _Set:
    __slots__ = ("kind", "needles", "rule")

    def __init__(self, rule: secret_rules.Rule) -> None:
        self.rule, self.kind = rule, rule.id
        self.needles = frozenset(_INDEX[n] for n in _needles_of(rule))


# gitleaks' catch-all runs after the provider rules, so that a provider's key is named by
# its own rule ("stripe-access-token", not "generic-api-key")
_CATCH_ALL = "generic-api-key"
_PROVIDERS = [_Set(r) for r in RULE_SET.rules if r.id != _CATCH_ALL]
_CATCH_ALLS = [_Set(r) for r in RULE_SET.rules if r.id == _CATCH_ALL]


class _Group:
    """Rule-set rules that read the same text: their finds are redacted together."""

    __slots__ = ("needles", "steps")

    def __init__(self, steps: list[_Set]) -> None:
        self.steps = steps
        self.needles = frozenset().union(*(s.needles for s in steps))


_PLAN: list[_Own | _Group] = [
    *(_Own(*row) for row in _OWN_FIRST),
    _Group(_PROVIDERS),
    _Group(_CATCH_ALLS),
    *(_Own(*row) for row in _OWN_LAST),
]
# One pass over the text finds every needle at once: 25 `in` scans of an 8 KB tool output
# cost ~140 µs, the automaton ~10 µs, and this gate runs on every string of every write.
# It searches the UTF-8 bytes: the needles are ASCII, and an ASCII byte never occurs inside
# a multi-byte character, so the same needles are found, faster than in the str (whose
# search maps each match back to a character index). A lone surrogate fails to encode as
# it failed in the str search: the same UnicodeEncodeError. In ASCII text a byte offset is
# a character offset; otherwise the str automaton gives the character offsets.
# Every occurrence counts, overlapping ones included ("sk-ant-" holds "sk-"). A DFA: with
# ~350 needles it is ~3x faster than the default NFA, and a first "any needle?" pass (with
# fewer needles the crate's SIMD prefilter made it worth it) now costs as much as this one.
_DFA = ahocorasick_rs.Implementation.DFA
_AUTOMATON = ahocorasick_rs.BytesAhoCorasick([n.encode() for n in _NEEDLES], implementation=_DFA)
_STR_AUTOMATON = ahocorasick_rs.AhoCorasick(list(_NEEDLES), implementation=_DFA)
_ROUNDS = 16
_SHORTEST = 8  # `pwd=abcd`: nothing shorter can hold a secret we recognise

_MARKER = re.compile(r"\[REDACTED:[a-z0-9_-]+\]")


def without_markers(text: str) -> str:
    """`text` with the scrubber's `[REDACTED:<kind>]` markers blanked out: a marker is not
    a concept or an entity of what was said."""
    return _MARKER.sub(" ", text) if "[REDACTED:" in text else text


_SECRET_KEY = re.compile(
    r"(?i)(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|account[_-]?key|secret|token"
    r"|passw(?:or)?d|passphrase|pwd|private[_-]?key|credentials?|authorization|cookie)$"
)


_SHORT = 64
_SHORT_CACHE_MAX = 50_000
_short_cache: dict[str, str] = {}
# Whether a dict key names a secret: the same few keys come in every payload, and the
# case-insensitive search costs ~2 µs a key where the lookup costs ~50 ns.
_secret_key_cache: dict[str, bool] = {}


def _names_secret(key: str) -> bool:
    hit = _secret_key_cache.get(key)
    if hit is None:
        hit = _SECRET_KEY.search(key) is not None
        if len(_secret_key_cache) < _SHORT_CACHE_MAX:
            _secret_key_cache[key] = hit
    return hit


def scrub(text: str) -> str:
    """Replace every secret in `text` with `[REDACTED:<kind>]`."""
    if len(text) < _SHORTEST:
        return text
    if len(text) <= _SHORT:
        # Keys and short values (tool names, commands, flags) repeat across payloads.
        hit = _short_cache.get(text)
        if hit is None:
            hit = _scrub(text)
            if len(_short_cache) < _SHORT_CACHE_MAX:
                _short_cache[text] = hit
        return hit
    return _scrub(text)


def _lower(text: str) -> str:
    """`text` lower-cased, character for character: "İ" is the one character whose lower
    case is two, and its simple lower case (what `re.I` uses) is "i"."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.replace("\u0130", "I").lower()


class _View:
    """The text being scrubbed, its lower-cased twin and where each needle occurs in it,
    computed again only after a rule changed the text."""

    __slots__ = ("_at", "_hits", "found", "lowered", "text")

    def __init__(self, text: str, lowered: str, encoded: bytes) -> None:
        self.text, self.lowered = text, lowered
        if text.isascii():
            self._hits = _AUTOMATON.find_matches_as_indexes(encoded, overlapping=True)
        else:
            self._hits = _STR_AUTOMATON.find_matches_as_indexes(self.lowered, overlapping=True)
        self.found = {i for i, _s, _e in self._hits}
        self._at: dict[int, list[int]] | None = None

    @classmethod
    def of(cls, text: str) -> _View:
        lowered = _lower(text)
        return cls(text, lowered, lowered.encode())

    def starts(self, needles: frozenset[int]) -> list[int]:
        """Where the needles start, in order."""
        at = self._at
        if at is None:
            at = self._at = {}
            for i, s, _e in self._hits:
                at.setdefault(i, []).append(s)
        lists = [at[i] for i in needles if i in at]
        return lists[0] if len(lists) == 1 else sorted({p for ps in lists for p in ps})


def _scrub(text: str) -> str:
    lowered = _lower(text)
    view = _View(text, lowered, lowered.encode())
    if not view.found:  # the common case: nothing to do
        return text
    for step in _PLAN:
        if view.found.isdisjoint(step.needles):
            continue
        if isinstance(step, _Own):
            out = _apply_own(view, step)
            if out is not view.text:
                view = _View.of(out)
            continue
        # The providers' rules all read the same text and their finds are redacted together:
        # one rule's redaction must not break the context another's pattern needs
        # (`typeformPWD==`tfp_...`: database-password's "=" hid the token). A rule-set rule
        # reports one secret per match (`kubernetes-secret-yaml` finds the first entry under
        # `data:` only): run them again on what they left, until none finds.
        for _round in range(_ROUNDS):
            out = _apply_set_group(view, step)
            if out is view.text:
                break
            view = _View.of(out)
    return view.text


def _apply_own(view: _View, own: _Own) -> str:
    subject = view.lowered if own.on_lower else view.text
    if not own.anchored:
        return _replace(view.text, own.kind, _spans(own.pattern.finditer(subject), own.group))
    matches = []
    last = -1
    for p in view.starts(own.needles):
        if p >= last and (m := own.pattern.match(subject, p)) is not None:
            matches.append(m)
            last = m.end()
    return _replace(view.text, own.kind, _spans(iter(matches), own.group)) if matches else view.text


def _spans(matches: Iterator[re.Match[str]], group: int) -> Iterator[tuple[int, int]]:
    for m in matches:
        yield m.span(m.lastindex or 0) if group < 0 else m.span(group)


def _apply_set_group(view: _View, group: _Group) -> str:
    """Every applicable rule of the group on the same text; overlapping finds are redacted
    as one, named by the rule that comes first."""
    found: list[tuple[int, int, int, str]] = []  # start, end, rank, kind
    for rank, step in enumerate(group.steps):
        if view.found.isdisjoint(step.needles):
            continue
        found.extend((a, b, rank, step.kind) for a, b in _set_spans(view, step))
    if not found:
        return view.text
    found.sort()
    merged: list[list[Any]] = []
    for a, b, rank, kind in found:
        if merged and a < merged[-1][1]:
            cur = merged[-1]
            cur[1] = max(cur[1], b)
            if rank < cur[2]:
                cur[2], cur[3] = rank, kind
        else:
            merged.append([a, b, rank, kind])
    return _replace_marked(view.text, [(a, b, kind) for a, b, _r, kind in merged])


def _set_spans(view: _View, step: _Set) -> list[tuple[int, int]]:
    rule, text = step.rule, view.text
    spans: list[tuple[int, int]] = []
    if rule.anchors:
        last = -1
        for p in view.starts(step.needles):
            if p < last:
                continue
            m = rule.pattern.match(text, p)
            if m is not None:
                span = rule.secret_span(m)
                if rule.accepts(text, m, span, RULE_SET.allowlist):
                    spans.append(span)
                    last = m.end()
    else:
        for m in rule.pattern.finditer(text):
            span = rule.secret_span(m)
            if rule.accepts(text, m, span, RULE_SET.allowlist):
                spans.append(span)
    return spans


def _replace(text: str, kind: str, spans: Iterator[tuple[int, int]] | list[tuple[int, int]]) -> str:
    """`text` with each span (in order, not overlapping) replaced by the kind's marker; a
    span that is already a marker stays."""
    return _replace_marked(text, ((a, b, kind) for a, b in spans))


def _replace_marked(
    text: str, spans: Iterator[tuple[int, int, str]] | list[tuple[int, int, str]]
) -> str:
    out: list[str] = []
    pos = 0
    for start, end, kind in spans:
        if start < pos or start == end or _MARKER.fullmatch(text, start, end):
            continue
        out.append(text[pos:start])
        out.append(f"[REDACTED:{kind}]")
        pos = end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def scrub_value(value: Any) -> Any:
    """Scrub every string inside a JSON-like value (dict keys included)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return _scrub_dict(value)
    if isinstance(value, list | tuple):
        return [scrub_value(v) for v in value]
    return value


def _scrub_dict(value: dict[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in value.items():
        key = str(k)
        if isinstance(v, str):  # most values: scrubbed here, without a call to scrub_value
            # {"password": "hunter2"}: the value alone has no secret shape, its key gives
            # it away
            out[scrub(key)] = (
                "[REDACTED:secret_assignment]"
                if v and _names_secret(key) and not _MARKER.fullmatch(v)
                else scrub(v)
            )
        else:
            out[scrub(key)] = scrub_value(v)
    # {"name": "DB_PASSWORD", "value": "hunter2"}: an environment entry in a list (docker,
    # kubernetes, CI settings) names its secret in a sibling field
    v = out.get("value")
    if isinstance(v, str) and v and not _MARKER.fullmatch(v):
        name = value.get("name", value.get("key"))
        if isinstance(name, str) and _names_secret(name):
            out["value"] = "[REDACTED:secret_assignment]"
    return out
