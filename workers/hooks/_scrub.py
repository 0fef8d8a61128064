"""Secret scrubbing for what a hook writes to disk (standard library only).

The server scrubs everything it stores; this copy exists because the spool is written
while the server is down, and a secret must not sit in a file on disk either. It knows
our own common shapes and loads the server's rule set (functions/kernel/secret_rules.json:
gitleaks' rules and ours; a copy lies beside the scripts for plugin installs), compiling only the rules whose needles
(anchors or keywords) occur in the text, with gitleaks' entropy and allowlist checks.

Importing this module costs nothing: `re` loads only when a text may hold a secret.
"""

from __future__ import annotations

import os

# `typing` costs ~4 ms of start-up; annotations are strings here, so only mypy needs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

if TYPE_CHECKING or __package__:
    from workers.hooks import _wire
else:
    import _wire

REDACTED = "[REDACTED]"
_HERE = os.path.dirname(os.path.abspath(__file__))
RULES_FILES = (
    # The copy beside the scripts: a plugin install (Claude Code, Codex) copies only this
    # folder, so the server's file is not there. tests/agent/test_hook_scrub.py keeps the
    # copy byte for byte equal to the server's.
    os.path.join(_HERE, "secret_rules.json"),
    os.path.join(
        os.path.dirname(os.path.dirname(_HERE)), "functions", "kernel", "secret_rules.json"
    ),
)

_SEP = r"(?:=>|:=|[:=])"
_VALUE = r"[^\s\"',;]{4,}"
_LINK = rf"(?:\"[^\"\n]*\"|'[^'\n]*'|{_VALUE})"
# (pattern, replacement): our own shapes, before the rule set
_OWN_FIRST = (
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----", REDACTED),
    (r"(?<=://)[^\s/@:'\"<>]+:[^\s/@'\"<>]+(?=@)", REDACTED),  # scheme://user:password@host
    (r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}", REDACTED),
    (r"\bgh[pousr]_[A-Za-z0-9]{30,}", REDACTED),
    (r"\bgithub_pat_[A-Za-z0-9_]{22,}", REDACTED),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", REDACTED),
    (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", REDACTED),
    (r"\bAIza[0-9A-Za-z_-]{35}", REDACTED),
    (r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", REDACTED),
    (r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}", r"\1" + REDACTED),
)
# ... and after it: `name = value` for a secret-looking name, a quoted value whole, a chain
# (`aws_secret: aws_secret_access_key = VALUE`) from its first link to its last
_OWN_LAST = (
    (
        r"(?i)\b([A-Za-z0-9_]*(?:password|passwd|passphrase|secret|token|api[_-]?key"
        rf"|access[_-]?key)[A-Za-z0-9_]*\\?[\"']?\s*{_SEP}\s*)"
        rf"({_LINK}(?:[ \t]*{_SEP}[ \t]*{_LINK})+|\\\"[^\"\\\n]+\\\"|\"[^\"\n]+\"|'[^'\n]+'"
        r"|[^\s\"',;]{6,})",
        r"\1" + REDACTED,
    ),
    (
        r"(?i)(?<![\w-])(--(?:[a-z0-9]+[_-])*(?:password|passwd|passphrase|token|secret"
        r"|api[_-]?key|access[_-]?key)[ \t]+)(?!-)([^\s\"']{4,}|\"[^\"\n]+\"|'[^'\n]+')",
        r"\1" + REDACTED,
    ),
)
# Every pattern above contains one of these (lower-cased).
_OWN_MARKERS = (
    "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "akia", "asia", "xox",
    "aiza", "eyj", "private key", "://", "bearer", "password", "passwd", "passphrase", "secret",
    "token", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
)  # fmt: skip
_SECRET_KEY = (
    r"(?i)(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|account[_-]?key|secret|token"
    r"|passw(?:or)?d|passphrase|pwd|private[_-]?key|credentials?|authorization|cookie)$"
)
_CATCH_ALL = "generic-api-key"

_data: dict[str, Any] | None = None
_needles: tuple[str, ...] | None = None
_compiled: dict[str, Any] = {}


def _rule_set() -> dict[str, Any]:
    global _data
    if _data is None:
        _data = {"rules": [], "allowlist": {}}  # without a file our own shapes still apply
        for path in RULES_FILES:
            try:
                with open(path, "rb") as f:
                    _data = _wire.loads(f.read())
                break
            except (OSError, ValueError):
                continue
        rules = _data["rules"]
        rules.sort(key=lambda r: r["id"] == _CATCH_ALL)  # a provider's rule goes first
    return _data


def _rule_needles(rule: dict[str, Any]) -> list[str]:
    return rule.get("anchors") or rule.get("keywords") or []


def might_hold_secret(lowered: str) -> bool:
    """Whether the lower-cased `lowered` holds a needle of any rule (no `re` needed)."""
    global _needles
    if _needles is None:
        found = [n for r in _rule_set()["rules"] for n in _rule_needles(r)]
        _needles = tuple(dict.fromkeys([*_OWN_MARKERS, *found]))
    return any(n in lowered for n in _needles)


def _re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    key = f"{flags}:{pattern}"
    p = _compiled.get(key)
    if p is None:
        import re

        p = _compiled[key] = re.compile(pattern, flags)
    return p


def _shannon(s: str) -> float:
    from math import log2

    n = len(s)
    return -sum(c / n * log2(c / n) for c in (s.count(ch) for ch in set(s)))


def _allowed(allow: dict[str, Any], secret: str, match: str, line: str) -> bool:
    import re

    target = allow.get("regexTarget", "secret")
    subject = secret if target == "secret" else match if target == "match" else line
    if any(_re(r, re.ASCII).search(subject) for r in allow.get("regexes", [])):
        return True
    lowered = secret.lower()
    return any(w in lowered for w in allow.get("stopwords", []))


def _secret_span(
    pattern: re.Pattern[str], rule: dict[str, Any], m: re.Match[str]
) -> tuple[int, int]:
    group = rule.get("secretGroup", 0)
    if group:
        return m.span(group)
    named = set(pattern.groupindex.values())
    best = (-1, -1)
    for g in range(1, pattern.groups + 1):
        s, e = m.span(g)
        if g not in named and s >= 0 and e - s > best[1] - best[0]:
            best = (s, e)
    return best if best[0] >= 0 else m.span()


def _apply_rule(text: str, rule: dict[str, Any], glob: dict[str, Any]) -> str:
    import re

    pattern = _re(rule["regex"], re.ASCII)
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(text):
        s, e = _secret_span(pattern, rule, m)
        secret = text[s:e]
        if s < pos or not secret or secret == REDACTED:
            continue
        if rule.get("entropy") and _shannon(secret) < rule["entropy"]:
            continue
        a, b = text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end())
        line = text[a : b if b >= 0 else len(text)]
        allows = [glob, *rule.get("allowlists", [])]
        if any(_allowed(x, secret, m.group(), line) for x in allows):
            continue
        out += [text[pos:s], REDACTED]
        pos = e
    return "".join(out) + text[pos:] if out else text


def scrub_text(text: str) -> str:
    lowered = text.lower()
    if not might_hold_secret(lowered):
        return text
    for pattern, repl in _OWN_FIRST:
        text = _re(pattern).sub(repl, text)
    data = _rule_set()
    for rule in data["rules"]:
        lowered = text.lower()
        if any(n in lowered for n in _rule_needles(rule)):
            for _round in range(16):  # one secret per match: run again on what is left
                out = _apply_rule(text, rule, data.get("allowlist", {}))
                if out is text:
                    break
                text = out
    for pattern, repl in _OWN_LAST:
        text = _re(pattern).sub(repl, text)
    return text


def scrub(value: Any) -> Any:
    """A copy of a JSON value with every string scrubbed; the value of a key that names a
    secret (`{"password": "hunter2"}`) is redacted whatever its shape."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {
            k: REDACTED
            if isinstance(v, str) and v and isinstance(k, str) and _re(_SECRET_KEY).search(k)
            else scrub(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value
