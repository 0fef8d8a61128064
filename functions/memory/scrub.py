"""Secret scrubbing: every write path passes text through `scrub` before it is hashed,
stored or indexed, so a secret never reaches KV, the event stream or an index.

Patterns are ordered: whole blocks first (<private>, PEM keys), then things that embed
other shapes (URLs with credentials, bearer headers, JWTs), then the vendor key shapes,
and the generic `name=value` assignments last so a known shape keeps its precise kind.
"""

from __future__ import annotations

import re
from typing import Any

import ahocorasick_rs

_RULES: list[tuple[str, re.Pattern[str], int]] = [
    # (kind, pattern, group to replace: 0 = whole match)
    ("private", re.compile(r"<private>.*?(?:</private>|\Z)", re.S), 0),
    (
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        0,
    ),
    # scheme://user:password@host -> keep the scheme and host, drop the credentials
    ("url_credentials", re.compile(r"(?<=://)[^\s/@:'\"<>]+:[^\s/@'\"<>]+(?=@)"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("bearer", re.compile(r"\bbearer\s+([a-z0-9._~+/=-]{12,})"), 1),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"), 0),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), 0),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), 0),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), 0),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("slack_token", re.compile(r"\bxox[abpors]-[A-Za-z0-9-]{10,}"), 0),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), 0),
    # name = value / "name": "value" / name: value, for secret-looking names
    (
        "secret_assignment",
        re.compile(
            r"""(?x)
            (?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|client[_-]?secret|
               auth[_-]?token|access[_-]?token|refresh[_-]?token|token|secret|
               passwd|password|pwd|private[_-]?key|credentials?)
            ["']?\s*[:=]\s*["']?
            (?!(?:true|false|null|none)\b)
            ([^\s"',;&}{\]\[]{4,})
            """
        ),
        1,
    ),
]

# Cheap substring checks (on the lower-cased text) that must hold for a rule to match at
# all: most text holds no secret, and one `in` scan is far cheaper than a regex pass.
_HINTS: dict[str, tuple[str, ...]] = {
    "private": ("<private",),
    "private_key": ("private key",),
    "url_credentials": ("://",),
    "jwt": ("eyj",),
    "bearer": ("bearer",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "aws_access_key": ("akia", "asia"),
    "google_api_key": ("aiza",),
    "slack_token": ("xox",),
    "gitlab_token": ("glpat-",),
    "npm_token": ("npm_",),
    "secret_assignment": (
        "key",
        "token",
        "secret",
        "passw",
        "pwd",
        "credential",
    ),
}

# These rules are written in lower case and matched against the lower-cased text, with the
# spans applied to the original: Python's IGNORECASE alternations cost ~25x more.
_ON_LOWER = frozenset({"private", "bearer", "secret_assignment"})
_IGNORECASE = {
    kind: re.compile(p.pattern, p.flags | re.I) for kind, p, _g in _RULES if kind in _ON_LOWER
}

_NEEDLES = tuple(dict.fromkeys(h for hs in _HINTS.values() for h in hs))
_PLAN = [(kind, p, g, frozenset(_NEEDLES.index(h) for h in _HINTS[kind])) for kind, p, g in _RULES]
# One pass over the text finds every hint at once: 25 `in` scans of an 8 KB tool output
# cost ~140 µs, the automaton ~20 µs, and this gate runs on every string of every write.
# The automata search the UTF-8 bytes: the needles are ASCII, and an ASCII byte never
# occurs inside a multi-byte character, so the same needles are found, faster than in the
# str (whose search maps each match back to a character index we do not use). A lone
# surrogate fails to encode as it failed in the str search: the same UnicodeEncodeError.
_NEEDLE_BYTES = [n.encode() for n in _NEEDLES]
# Which needles occur: every occurrence, overlapping ones included ("sk-ant-" holds "sk-").
_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(_NEEDLE_BYTES)
# Whether any needle occurs: a leftmost search reports the occurrence that starts first
# whenever there is one, and unlike the overlapping search it can use the crate's SIMD
# prefilter: ~4x faster on a 4 KB tool output, and most texts stop here.
_ANY_NEEDLE = ahocorasick_rs.BytesAhoCorasick(
    _NEEDLE_BYTES,
    matchkind=ahocorasick_rs.MatchKind.LeftmostFirst,
    implementation=ahocorasick_rs.Implementation.DFA,
)
_SHORTEST = 8  # `pwd=abcd`: nothing shorter can hold a secret we recognise

_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")


def without_markers(text: str) -> str:
    """`text` with the scrubber's `[REDACTED:<kind>]` markers blanked out: a marker is not
    a concept or an entity of what was said."""
    return _MARKER.sub(" ", text) if "[REDACTED:" in text else text


_SECRET_KEY = re.compile(
    r"(?i)(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|pwd|private[_-]?key|credentials?"
    r"|authorization|cookie)$"
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


def _scrub(text: str) -> str:
    lowered, lowered_of = text.lower(), text
    encoded = lowered.encode()
    if not _ANY_NEEDLE.find_matches_as_indexes(encoded):  # the common case: nothing to do
        return text
    found = {i for i, _s, _e in _AUTOMATON.find_matches_as_indexes(encoded, overlapping=True)}
    for kind, pattern, group, needles in _PLAN:
        if found.isdisjoint(needles):
            continue
        if kind in _ON_LOWER:
            if lowered_of is not text:  # an earlier rule replaced something
                lowered, lowered_of = text.lower(), text
            if len(lowered) == len(text):
                text = _apply(text, lowered, kind, pattern, group)
            else:  # a character whose lower case has another length: spans would shift
                text = _apply(text, text, kind, _IGNORECASE[kind], group)
        else:
            text = _apply(text, text, kind, pattern, group)
    return text


def _apply(text: str, subject: str, kind: str, pattern: re.Pattern[str], group: int) -> str:
    """Replace `group` of every match of `pattern` in `subject` (the text itself or its
    lower-cased twin of equal length) at the same span of `text`."""
    marker = f"[REDACTED:{kind}]"
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(subject):
        start, end = m.span(group)
        if group and text[start:end].startswith("[REDACTED:"):
            continue
        out.append(text[pos:start])
        out.append(marker)
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
    return out
