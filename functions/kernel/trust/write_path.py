"""What a write path uses of the poisoning check, in one import:

from functions.kernel.trust import write_path as trust

verdict = trust.classify_value(data, source)  # before anything is changed
data = trust.stored_value(data)  # invisible characters out, then secrets
verdict = await trust.second_opinion(client, verdict, data, source)  # off by default
record.trust = trust.trust_of(verdict, source)
...store it...
trust.count(client, record.trust)
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
