"""What a rule of the poisoning classifier is, and the codes its hits carry.

A rule is a pattern over the lower-cased text and the needles (lower-case substrings) that
every match holds: one Aho-Corasick pass over the text finds all needles of all rules, and
a rule's pattern runs only in a window around the places its needles occurred, so text
that holds none costs one automaton pass. The codes are stable: records carry them, status
counts by them, docs name them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

IGNORE_PREVIOUS = "ignore-previous"
INSTRUCTION_TO_AI = "instruction-to-ai"
OVERRIDE_POLICY = "override-policy"
TELL_THE_USER = "tell-the-user"
CLAIMS_CONSENT = "claims-consent"
EXFILTRATION = "exfiltration"
ROLE_MARKER = "role-marker"
HTML_COMMENT = "html-comment-instruction"
HIDDEN_CHARACTERS = "hidden-characters"

CODES = (
    IGNORE_PREVIOUS,
    INSTRUCTION_TO_AI,
    OVERRIDE_POLICY,
    TELL_THE_USER,
    CLAIMS_CONSENT,
    EXFILTRATION,
    ROLE_MARKER,
    HTML_COMMENT,
    HIDDEN_CHARACTERS,
)


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    weak: bool = False
    """A phrase also common in honest text written for a person ("tell the user that ..." in
    a code comment): a weak hit alone does not make a text suspect, with any other it does."""
    check: Callable[[str, re.Match[str]], bool] | None = None
    """A further test of a match, given the lower-cased text it was found in."""
    also: tuple[str, ...] = ()
    """Needles of which one must also occur in the window for the pattern to run there: the
    second half of a two-part phrase, when the first half is a common word ("answer")."""
    lead: int = 80
    """How far before a needle a match may start: the pattern runs from there..."""
    reach: int = 400
    """...to this far after the needle. Tight windows are what keep a needle-dense text
    (code full of `token` and `password`) cheap."""


def rx(pattern: str) -> re.Pattern[str]:
    """A rule's pattern: verbose (spaces and line breaks are layout), `^` at line starts."""
    return re.compile(pattern, re.X | re.M)


def needles(spec: str) -> tuple[str, ...]:
    """Needles written "a|b c|d" (a needle may hold spaces)."""
    return tuple(spec.split("|"))


def combos(*parts: Iterable[str]) -> tuple[str, ...]:
    """Every concatenation of one item of each part: combos(("not ", "never "), ("tell",))."""
    return tuple("".join(p) for p in itertools.product(*parts))
