"""The mirrored secret rule set (secret_rules.json: gitleaks' rules and a few of ours,
written by ops/secret_rules.py) compiled, with the checks gitleaks makes before it reports
a candidate: the secret's Shannon entropy, the rule's allowlists, the global allowlist.

A rule's `anchors` are literal prefixes (lower case) that every match starts with: the
scrubber tries `pattern.match` only where one occurs. A rule without anchors is searched
in full, and only when one of its `keywords` occurs.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ahocorasick_rs

RULES_FILE = Path(__file__).with_name("secret_rules.json")


class _Stopwords:
    """Whether a (lower-cased) secret contains any of many words: one automaton pass."""

    def __init__(self, words: list[str]) -> None:
        self._ac = ahocorasick_rs.AhoCorasick(words)

    def any_in(self, text: str) -> bool:
        return bool(self._ac.find_matches_as_indexes(text.lower()))


@dataclass(frozen=True, slots=True)
class Allowlist:
    """A candidate matching any of `regexes` (on its secret, whole match or line) or whose
    secret contains a stopword is not a secret (gitleaks' OR condition)."""

    target: str
    regexes: tuple[re.Pattern[str], ...]
    stopwords: _Stopwords | None

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"secret": secret, "match": match}.get(self.target, line)
        if any(r.search(subject) for r in self.regexes):
            return True
        return self.stopwords is not None and self.stopwords.any_in(secret)


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    anchors: tuple[str, ...]
    entropy: float
    group: int
    """The capture group holding the secret; 0: the longest unnamed group that took part
    (gitleaks takes the first non-empty one, which in a rule such as `sonar-api-token` is
    the word "token" of the name, not the value), or the whole match if there is none."""
    unnamed: tuple[int, ...]
    allowlists: tuple[Allowlist, ...]

    def secret_span(self, m: re.Match[str]) -> tuple[int, int]:
        if self.group:
            return m.span(self.group)
        best = (m.start(), m.end()) if not self.unnamed else (0, -1)
        for g in self.unnamed:
            s, e = m.span(g)
            if s >= 0 and e - s > best[1] - best[0]:
                best = (s, e)
        return best if best[1] >= 0 else m.span()

    def accepts(self, text: str, m: re.Match[str], span: tuple[int, int], glob: Allowlist) -> bool:
        """Whether gitleaks would report this match (entropy, allowlists)."""
        secret = text[span[0] : span[1]]
        if not secret or (self.entropy and shannon(secret) < self.entropy):
            return False
        if not self.allowlists and not glob.regexes:
            return True
        line = _line(text, m.start(), m.end())
        if glob.allows(secret, m.group(), line):
            return False
        return not any(a.allows(secret, m.group(), line) for a in self.allowlists)


@dataclass(frozen=True, slots=True)
class RuleSet:
    rules: tuple[Rule, ...]
    allowlist: Allowlist
    gitleaks_commit: str


def shannon(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _line(text: str, start: int, end: int) -> str:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return text[a : b if b >= 0 else len(text)]


def _allowlist(raw: dict[str, Any]) -> Allowlist:
    words = raw.get("stopwords") or []
    return Allowlist(
        target=raw.get("regexTarget", "secret"),
        regexes=tuple(re.compile(r, re.ASCII) for r in raw.get("regexes", [])),
        stopwords=_Stopwords(words) if words else None,
    )


def _rule(raw: dict[str, Any]) -> Rule:
    pattern = re.compile(raw["regex"], re.ASCII)
    named = set(pattern.groupindex.values())
    return Rule(
        id=raw["id"],
        pattern=pattern,
        keywords=tuple(raw.get("keywords", [])),
        anchors=tuple(raw.get("anchors", [])),
        entropy=float(raw.get("entropy", 0)),
        group=int(raw.get("secretGroup", 0)),
        unnamed=tuple(g for g in range(1, pattern.groups + 1) if g not in named),
        allowlists=tuple(_allowlist(a) for a in raw.get("allowlists", [])),
    )


def load(path: Path = RULES_FILE) -> RuleSet:
    data = json.loads(path.read_text())
    return RuleSet(
        rules=tuple(_rule(r) for r in data["rules"]),
        allowlist=_allowlist(data.get("allowlist", {})),
        gitleaks_commit=data["gitleaks"]["commit"],
    )
