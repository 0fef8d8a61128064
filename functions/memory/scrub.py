"""Secret scrubbing: every write path passes text through `scrub` before it is hashed,
stored or indexed, so a secret never reaches KV, the event stream or an index.

Patterns are ordered: whole blocks first (<private>, PEM keys), then things that embed
other shapes (URLs with credentials, bearer headers, JWTs), then the vendor key shapes,
and the generic `name=value` assignments last so a known shape keeps its precise kind.
"""

from __future__ import annotations

import re
from typing import Any

_RULES: list[tuple[str, re.Pattern[str], int]] = [
    # (kind, pattern, group to replace: 0 = whole match)
    ("private", re.compile(r"<private>.*?(?:</private>|\Z)", re.S | re.I), 0),
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
    ("bearer", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{12,})"), 1),
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
            r"""(?ix)
            (?:[a-z0-9_.-]*?)
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

_ALREADY = re.compile(r"^\[REDACTED:[a-z_]+\]$")
_SECRET_KEY = re.compile(
    r"(?i)(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|pwd|private[_-]?key|credentials?"
    r"|authorization|cookie)$"
)


def scrub(text: str) -> str:
    """Replace every secret in `text` with `[REDACTED:<kind>]`."""
    if not text:
        return text
    for kind, pattern, group in _RULES:
        text = _apply(text, kind, pattern, group)
    return text


def _apply(text: str, kind: str, pattern: re.Pattern[str], group: int) -> str:
    marker = f"[REDACTED:{kind}]"

    def sub(m: re.Match[str]) -> str:
        if group == 0:
            return marker
        value = m.group(group)
        if _ALREADY.match(value) or value.startswith("[REDACTED:"):
            return m.group(0)
        start, end = m.span(group)
        base = m.start(0)
        whole = m.group(0)
        return whole[: start - base] + marker + whole[end - base :]

    return pattern.sub(sub, text)


def scrub_value(value: Any) -> Any:
    """Scrub every string inside a JSON-like value (dict keys included)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        # {"password": "hunter2"}: the value alone has no secret shape, its key gives it away
        return {
            scrub(str(k)): (
                "[REDACTED:secret_assignment]"
                if isinstance(v, str) and v and _SECRET_KEY.search(str(k)) and not _ALREADY.match(v)
                else scrub_value(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub_value(v) for v in value]
    return value
