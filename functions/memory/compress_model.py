"""Observation compression by a model: upstream's `AGENTMEMORY_AUTO_COMPRESS` (off by default).

Observe stays what it is: the keyless compressor's record is stored and acknowledged at once
(read-your-writes, the reply's latency and publish-once unchanged). With the setting on and a
provider configured, observe also enqueues the observation's id on the `compress` queue; the
queue trigger runs `mem::compress-model` (durable, retried, dead-lettered), which asks the
model for the observation's type, title, facts, narrative, concepts, files and importance,
stores them as the record's next version under compare-and-set with `revision` 1: one
ObservationAdded on MEM_EVENTS, which is the record and tells the read models it replaces
the first one (search upserts it; the graph, profile and trends feeds counted it already).

The prompt holds the scrubbed source text only (the model client scrubs again); a reply that
does not decode or fails upstream's checks (at least one fact, a narrative of ten or more
characters) is asked once more with a stricter instruction, then the keyless record stays.
"""

from __future__ import annotations

import logging

import msgspec

from functions.kernel.models.client import ModelClient
from functions.kernel.records import Observation
from functions.kernel.store import MemoryStore
from functions.kernel.trust import write_path as trust
from functions.memory.settings import memory_settings

log = logging.getLogger("functions.memory")
QUEUE = "compress"
TASK = "compress"
SOURCE_MAX = 4000
"""Characters of the observation's source text the prompt carries (upstream: 4000 each of
input and output)."""
TYPES = frozenset(
    """file_read file_write file_edit command search web prompt error decision discovery
    subagent task session conversation notification response other""".split()
)

SYSTEM = (
    "You compress one event from an AI coding agent's session into a memory record. "
    "Answer with one JSON object and nothing else, with the keys: "
    '"type" (one of: ' + ", ".join(sorted(TYPES)) + "), "
    '"title" (at most 80 characters, what happened), "subtitle" (a short qualifier), '
    '"facts" (a list of short, self-contained facts worth remembering), '
    '"narrative" (two or three sentences: what was done, why, and what came of it), '
    '"concepts" (a list of lower-case topic words), "files" (a list of file paths involved), '
    '"importance" (an integer from 1, trivial, to 10, essential).'
)
STRICT = (
    " Your previous answer was not usable. Give at least one fact and a narrative of at least "
    "one full sentence, as a single JSON object."
)


class Compressed(msgspec.Struct, kw_only=True):
    """The model's reply."""

    type: str = ""
    title: str = ""
    subtitle: str = ""
    facts: list[str] = msgspec.field(default_factory=list)
    narrative: str = ""
    concepts: list[str] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    importance: int = 0

    def usable(self) -> bool:
        return (
            bool(self.title.strip())
            and len(self.narrative.strip()) >= 10
            and any(f.strip() for f in self.facts)
        )


class CompressIn(msgspec.Struct, kw_only=True):
    id: str


class CompressOut(msgspec.Struct, kw_only=True):
    outcome: str
    """revised, kept (the model gave nothing usable), gone (forgotten), already (revised)."""


def requested() -> bool:
    """AGENTMEMORY_AUTO_COMPRESS is on (upstream: `true`; off by default)."""
    return memory_settings().auto_compress


def enabled(model: ModelClient) -> bool:
    """Requested, and a provider is configured to do it."""
    return requested() and model.enabled


def prompt(obs: Observation) -> str:
    return "\n".join([
        f"Timestamp: {obs.timestamp}",
        f"Hook: {obs.hook_type}",
        f"Tool: {obs.tool_name or '-'}",
        f"Project: {obs.project or '-'}",
        f"Files: {', '.join(obs.files) or '-'}",
        "Event:",
        (obs.raw or obs.narrative or obs.title)[:SOURCE_MAX],
    ])  # fmt: skip


def revised(obs: Observation, got: Compressed) -> Observation:
    """The stored record with the model's fields (ours where it gave none). The rewrite
    inherits the record's verdict (`trust`): its words come from the same source; what the
    model wrote is sanitized like every stored word."""
    got = trust.stored_record(got)
    title = got.title.strip()[:200]
    if got.subtitle.strip():
        title = f"{title}: {got.subtitle.strip()}"[:200]
    return msgspec.structs.replace(
        obs,
        type=got.type if got.type in TYPES else obs.type,
        title=title,
        narrative=got.narrative.strip()[:4000],
        facts=[f.strip()[:500] for f in got.facts if f.strip()][:20],
        concepts=[c.strip().lower()[:64] for c in got.concepts if c.strip()][:12] or obs.concepts,
        files=[f.strip() for f in got.files if f.strip()][:20] or obs.files,
        importance=min(10, max(1, got.importance)) if got.importance else obs.importance,
        revision=1,
    )


async def compress_with_model(store: MemoryStore, model: ModelClient, obs_id: str) -> str:
    obs = await store.get_observation(obs_id)
    if obs is None:
        return "gone"
    if obs.revision:
        # Revised by an earlier delivery (the rewrite is one write: record and event), or
        # rewritten otherwise since it was stored: not sent to the model again.
        return "already"
    got: Compressed | None = None
    for system in (SYSTEM, SYSTEM + STRICT):
        got = await model.ask(TASK, system, prompt(obs), Compressed)
        if got is not None and got.usable():
            break
        got = None
    if got is None:
        log.info("compression model gave nothing usable for %s: the keyless record stays", obs_id)
        return "kept"
    outcome = ["revised"]

    def write(cur: Observation) -> Observation | None:
        if cur.revision:  # revised by a redelivery meanwhile
            outcome[0] = "already"
            return None
        return revised(cur, got)

    # The stored record's next version: its ObservationAdded, with `revision` 1, is both
    # the record and what tells the read models it replaces the first one.
    if await store.update_observation(obs_id, write) is None:
        return "gone"  # forgotten meanwhile
    return outcome[0]
