"""What every write path does with a record's words, in this order: classify them (the
hidden characters are evidence), remove the invisible characters (`sanitize`), then scrub
the secrets. Sanitizing first matters for secrets too: a zero-width character inside a key
("sk-ant-api\u200b03-...") hides it from the secret patterns, not from a model.

A record that arrives whole from elsewhere (a peer, an export file) is `vet`ted: its own
`trust` may hold it, never clear it.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from functions.kernel.records import Lesson, Memory, Observation, SessionSummary, Trust
from functions.kernel.scrub import scrub, scrub_value
from functions.kernel.trust.classify import Source, Verdict, classify_value
from functions.kernel.trust.invisible import sanitize, sanitize_value

R = TypeVar("R", bound=Observation | Memory | SessionSummary | Lesson)
S = TypeVar("S", bound=msgspec.Struct)

TEXT_FIELDS: dict[type[Any], tuple[str, ...]] = {
    Observation: ("title", "narrative", "facts", "raw"),
    Memory: ("content", "title", "steps"),
    SessionSummary: ("title", "narrative", "decisions", "steps"),
    Lesson: ("content", "context"),
}
"""The words of a record a reader (and a model) reads; ids and times are only sanitized."""


def stored_text(text: str) -> str:
    """`text` as it may be stored and shown: without invisible characters, then scrubbed."""
    return scrub(sanitize(text))


def stored_value(value: Any) -> Any:
    """`stored_text` of every string of a JSON-like value (dict keys included)."""
    return scrub_value(sanitize_value(value))


def trust_of(verdict: Verdict, source: Source) -> Trust:
    return Trust(held=verdict.suspect, reasons=list(verdict.reasons), source=source.kind)


def either(ours: Trust, theirs: Trust | None) -> Trust:
    """`ours`, held also when `theirs` (a peer's, a file's, the stored record's) holds: a
    verdict from elsewhere may hold a record, never clear one."""
    if theirs is None or not theirs.held:
        return ours
    reasons = list(dict.fromkeys([*ours.reasons, *theirs.reasons]))
    return Trust(held=True, reasons=reasons, source=ours.source)


def check_record(record: R, source: Source) -> Verdict:
    """The verdict on a record's words (its `TEXT_FIELDS`), as they are now."""
    return classify_value({f: getattr(record, f) for f in TEXT_FIELDS[type(record)]}, source)


def stored_record(record: S) -> S:
    """`record` with every string of it (ids too) sanitized and scrubbed."""
    out: S = msgspec.convert(stored_value(msgspec.to_builtins(record)), type(record))
    return out


def vet(record: R, source: Source) -> R:
    """A record that arrived whole (a peer's, an export's): its words classified, every
    string of it sanitized and scrubbed, its `trust` ours (held too if its own held)."""
    verdict = check_record(record, source)
    theirs = record.trust
    out = stored_record(msgspec.structs.replace(record, trust=None))
    out.trust = either(trust_of(verdict, source), theirs)
    return out
