"""A model's session summary (when a provider is configured: functions/kernel/models).

The keyless summary (summarize.py) is the model's input and the fallback: the model writes
the title, narrative, decisions, files and concepts from the session's ordered steps, prompts,
decisions and counts; the steps, sources and counts stay ours (procedures are built from
them). The answer is cached under `mem_lifecycle/sum.<sessionId>` with a fingerprint of the
keyless summary, so re-summarizing an unchanged session costs no call and gives the same
record (the sweep stays idempotent); a failure or a reply that does not decode keeps the
keyless summary and caches nothing (a later run retries).

A session summarized again after more turns is summarized incrementally (upstream's
`coveredThrough` summaries): the model gets its own last summary and only the steps since,
not the whole session again, so each call's input stays the size of what is new.
"""

from __future__ import annotations

import hashlib

import msgspec

from engine import Bucket
from functions.kernel.ids import kv_key
from functions.kernel.models.client import ModelClient
from functions.kernel.records import SessionSummary

TASK = "summary"
MAX_STEPS = 120
MAX_LIST = 20
SYSTEM = (
    "You write the summary of one coding session for an AI coding agent's memory. The input is "
    "what the session did, in order, and a draft the memory service made without a model. "
    'Reply with one JSON object and nothing else: {"title": "...", "narrative": "...", '
    '"decisions": ["..."], "files": ["..."], "concepts": ["..."]}. title: what the session '
    "achieved, at most 100 characters. narrative: 3 to 5 sentences on outcomes and why, not a "
    "list of tool calls. decisions: the technical decisions made, one sentence each. files: "
    "paths created or changed. concepts: a few reusable search terms. Keep file paths, "
    "commands, names and numbers exactly as given; add nothing the input does not say."
)


SYSTEM_SINCE = (
    "You keep the summary of one coding session for an AI coding agent's memory up to date. "
    "The input is the summary so far (JSON), what the session did since, in order, and a draft "
    "the memory service made without a model for the whole session. Reply with the updated "
    'summary as one JSON object and nothing else: {"title": "...", "narrative": "...", '
    '"decisions": ["..."], "files": ["..."], "concepts": ["..."]}, with the same rules: title '
    "at most 100 characters on what the session achieved; narrative 3 to 5 sentences on "
    "outcomes and why; keep what still holds from the summary so far, add what is new. Keep "
    "file paths, commands, names and numbers exactly as given; add nothing the input does "
    "not say."
)


class SummaryReply(msgspec.Struct, kw_only=True):
    title: str
    narrative: str
    decisions: list[str] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    concepts: list[str] = msgspec.field(default_factory=list)


class Worded(msgspec.Struct, kw_only=True):
    """`mem_lifecycle/sum.<sessionId>`"""

    fingerprint: str
    reply: SummaryReply


def fingerprint(s: SessionSummary) -> str:
    keyless = msgspec.structs.replace(s, created_at="")
    return hashlib.sha256(msgspec.json.encode(keyless)).hexdigest()[:32]


def prompt(s: SessionSummary) -> str:
    lines = [f"Project: {s.project or '(none)'}", f"Status: {s.status or 'ended'}"]
    lines.append(f"Draft title: {s.title}")
    lines.append(f"Draft narrative: {s.narrative}")
    if s.steps:
        lines.append("Steps in order:")
        lines += [f"{i}. {step}" for i, step in enumerate(s.steps[:MAX_STEPS], 1)]
    if s.decisions:
        lines.append("Decisions noted: " + "; ".join(s.decisions[:MAX_LIST]))
    if s.files:
        lines.append("Files changed: " + ", ".join(s.files[:MAX_LIST]))
    if s.concepts:
        lines.append("Concepts: " + ", ".join(s.concepts[:MAX_LIST]))
    return "\n".join(lines)


def prompt_since(s: SessionSummary, before: SummaryReply, since: list[str]) -> str:
    lines = [f"Project: {s.project or '(none)'}", f"Status: {s.status or 'ended'}"]
    lines.append("Summary so far: " + msgspec.json.encode(before).decode())
    lines.append("What the session did since, in order:")
    lines += [f"{i}. {step}" for i, step in enumerate(since[-MAX_STEPS:], 1)]
    lines.append(f"Draft narrative for the whole session: {s.narrative}")
    if s.decisions:
        lines.append("Decisions noted: " + "; ".join(s.decisions[:MAX_LIST]))
    if s.files:
        lines.append("Files changed: " + ", ".join(s.files[:MAX_LIST]))
    return "\n".join(lines)


def _apply(s: SessionSummary, r: SummaryReply) -> SessionSummary:
    def clean(items: list[str]) -> list[str]:
        return list(dict.fromkeys(x.strip() for x in items if x.strip()))[:MAX_LIST]

    return msgspec.structs.replace(
        s,
        title=r.title.strip()[:120],
        narrative=r.narrative.strip()[:2000],
        decisions=clean(r.decisions) or s.decisions,
        files=clean(r.files) or s.files,
        concepts=clean(r.concepts) or s.concepts,
    )


async def word(
    model: ModelClient, life: Bucket, s: SessionSummary, *, since: list[str] | None = None
) -> SessionSummary:
    """`s` as the model writes it (cached), or `s` itself. `since`: the steps the session
    took after its last summary (None: a first summary): with the model's last summary
    cached, it is updated from those alone; no new step, no call."""
    if not model.enabled:
        return s
    fp = fingerprint(s)
    key = "sum." + kv_key(s.session_id)
    cached: Worded | None = await life.get(key, Worded)
    if cached is not None and cached.fingerprint == fp:
        return _apply(s, cached.reply)
    if cached is not None and since is not None and not since:
        # counts moved, no step did: the words still hold
        await life.put(key, Worded(fingerprint=fp, reply=cached.reply))
        return _apply(s, cached.reply)
    if cached is not None and since is not None:
        got = await model.ask(
            TASK, SYSTEM_SINCE, prompt_since(s, cached.reply, since), SummaryReply
        )
    else:
        got = await model.ask(TASK, SYSTEM, prompt(s), SummaryReply)
    if got is None or not got.title.strip() or not got.narrative.strip():
        return s
    await life.put(key, Worded(fingerprint=fp, reply=got))
    return _apply(s, got)
