"""Poisoning caught at write (issue 41): every write path classifies a record's words by
where they came from (`Source`), removes the invisible characters, scrubs the secrets and
puts the verdict on the record (`records.Trust`); a held record is stored but kept out of
what feeds an agent by the read paths.

    verdict = classify_value(data, source_of_hook(hook_type, data))
    data = stored_value(data)  # sanitize, then scrub
    record.trust = trust_of(verdict, source)

A kernel package because the write paths live in four families (memory, replay, team,
bridge) and more. docs/SECURITY.md says what is caught and what is not.
"""

from functions.kernel.trust.classify import (
    Hit,
    Source,
    SourceKind,
    Verdict,
    classify,
    classify_value,
    strings_of,
)
from functions.kernel.trust.counts import TrustCounts, count
from functions.kernel.trust.invisible import sanitize, sanitize_value
from functions.kernel.trust.rule import CODES
from functions.kernel.trust.second_opinion import SECOND_OPINION, second_opinion
from functions.kernel.trust.sources import (
    ASSISTANT,
    BRIDGE,
    COMMAND,
    HOST,
    IMPORT,
    INSTRUCTION_FILES,
    PEER,
    REMEMBER,
    USER,
    source_of_hook,
)
from functions.kernel.trust.verdicts import (
    check_record,
    either,
    stored_record,
    stored_text,
    stored_value,
    trust_of,
    vet,
)

__all__ = [
    "ASSISTANT",
    "BRIDGE",
    "CODES",
    "COMMAND",
    "HOST",
    "IMPORT",
    "INSTRUCTION_FILES",
    "PEER",
    "REMEMBER",
    "SECOND_OPINION",
    "USER",
    "Hit",
    "Source",
    "SourceKind",
    "TrustCounts",
    "Verdict",
    "check_record",
    "classify",
    "classify_value",
    "count",
    "either",
    "sanitize",
    "sanitize_value",
    "second_opinion",
    "source_of_hook",
    "stored_record",
    "stored_text",
    "stored_value",
    "strings_of",
    "trust_of",
    "vet",
]
