"""Liveness, health and `status`: what is wrong and how to fix it (JSON, or HTML for a
browser)."""

from __future__ import annotations

import functools
import time

from engine import FunctionError
from engine.disk import mb
from engine.paths import Instance, current_layout
from engine.settings import worker_identity
from functions.kernel.models import usage as model_usage
from functions.kernel.models.settings import ModelSettings
from functions.kernel.models.usage import UsageOut
from functions.kernel.records import EVENTS_STREAM
from functions.kernel.store import STORE_ERRORS, MemoryStore
from functions.kernel.trust import counts as trust_counts
from functions.kernel.trust.counts import TrustCounts
from functions.memory.inbox import Inbox
from functions.memory.settings import memory_settings
from functions.memory.wire import Check, Health, Livez

SERVICE = "agentmemory"
VERSION = "0.1.0"


VIEWER_MODULE = "workers.viewer"


@functools.cache
def viewer_configured() -> bool:
    """Whether this instance runs the viewer: `AGENTMEMORY_VIEWER` (on/off) when set, else
    whether the engine config this worker was started from has the viewer worker."""
    given = memory_settings().viewer
    if given is not None:
        return given
    path = worker_identity().config
    if path is None:
        return False
    from engine.config import ConfigError, load_config

    try:
        cfg = load_config(path)
    except ConfigError:
        return False
    return any(
        w.enabled
        and (
            w.module == VIEWER_MODULE
            or VIEWER_MODULE in (w.modules or [])
            or VIEWER_MODULE in (w.command or [])
        )
        for w in cfg.workers
    )


def livez(store: MemoryStore) -> Livez:
    # The supervisor passes the instance's real ports (they move with --port/--instance).
    ports = Instance.resolve().ports
    lay = current_layout()
    streams = lay.given_port("streams") or ports.streams
    viewer = lay.given_port("viewer") or ports.viewer
    on = viewer_configured()
    return Livez(
        status="ok",
        service=SERVICE,
        version=VERSION,
        boot_id=store.boot_id,
        streams_port=streams,
        viewer_port=viewer if on else None,
        viewer_skipped=not on,
    )


def health(store: MemoryStore) -> Health:
    return Health(
        status="ok",
        service=SERVICE,
        version=VERSION,
        boot_id=store.boot_id,
        uptime_seconds=round(time.time() - store.started, 1),
    )


_UNREACHABLE: tuple[type[BaseException], ...] = (FunctionError, *STORE_ERRORS)
"""The stream is missing, or the bus is away."""


async def checks(store: MemoryStore, inbox: Inbox) -> list[Check]:
    out: list[Check] = []
    try:
        info = await store.events.info()
        out.append(
            Check(
                name="events",
                ok=True,
                detail=f"{EVENTS_STREAM}: {info.messages} events, {info.bytes} bytes",
            )
        )
    except _UNREACHABLE as exc:
        out.append(
            Check(
                name="events",
                ok=False,
                detail=f"JetStream stream {EVENTS_STREAM} unreachable: {type(exc).__name__}",
                fix="check that the engine's nats-server runs with JetStream "
                "(`python -m engine status`) and has disk space",
            )
        )
    full = inbox.disk_full()
    out.append(
        Check(
            name="disk",
            ok=not full,
            detail=full.split(":", 1)[0]
            if full
            else f"{mb(inbox.free_disk())} free on the disk holding {inbox.root}",
            fix="free space on that disk (or move the data dir with --data-dir): observations "
            "are refused with a retryable 503 meanwhile and writes resume by themselves"
            if full
            else "",
        )
    )
    pending, dead = inbox.size(), inbox.dead_count()
    out.append(
        Check(
            name="inbox",
            ok=pending < inbox.max_entries // 2,
            detail=f"{pending} observations waiting to be stored (limit {inbox.max_entries})",
            fix=""
            if pending == 0
            else "the store is failing: see the events check; entries are retried with backoff",
        )
    )
    out.append(
        Check(
            name="dead_letters",
            ok=dead == 0,
            detail=f"{dead} observations gave up after {inbox.max_attempts} attempts",
            fix="" if dead == 0 else "fix the store, then POST /agentmemory/capture/retry",
        )
    )
    try:
        await store.client.call("mem::context", {"sessionId": "status-probe"}, timeout=1.0)
        out.append(Check(name="retrieval", ok=True, detail="mem::context answers"))
    except FunctionError as err:
        ok = err.code not in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
        out.append(
            Check(
                name="retrieval",
                ok=ok,
                detail="mem::context answers" if ok else f"retrieval is not serving: {err.message}",
                fix=""
                if ok
                else "start the memory worker with the search functions (config/engine.yaml)",
            )
        )
    return out


KEYS = "ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY or MINIMAX_API_KEY"


async def model_checks(store: MemoryStore) -> tuple[list[Check], UsageOut | None]:
    """One check per configured provider: failing when a process's breaker is open."""
    settings = ModelSettings.from_env()
    if not settings.enabled:
        detail = f"no model provider configured: memory runs keyless (set {KEYS} to add one)"
        return [Check(name="models", ok=True, detail=detail)], None
    try:
        usage = await model_usage.read(
            store.client, settings.primary, [p.name for p in settings.chain]
        )
    except _UNREACHABLE as exc:
        return [Check(name="models", ok=False, detail=f"model usage unreadable: {exc}")], None
    seen = {p.name: p for p in usage.providers}
    out = []
    for p in settings.chain:
        u = seen.get(p.name)
        opened = sorted(k for k, v in (u.breakers if u else {}).items() if v == "open")
        figures = (
            f"{u.calls} calls, {u.ok} ok, {u.failed} failed, {u.skipped} skipped; "
            f"tokens {u.tokens_in} in / {u.tokens_out} out"
            if u
            else "no calls yet"
        )
        out.append(
            Check(
                name=f"model:{p.name}",
                ok=not opened,
                detail=f"{p.name} ({p.model}): {figures}"
                + (f"; breaker open in {len(opened)} process(es)" if opened else ""),
                fix=""
                if not opened
                else f"last error: {u.last_error if u else ''}; check {p.name.upper()}_API_KEY, "
                "its base URL and model (calls resume by themselves once it answers)",
            )
        )
    return out, usage


async def trust_check(store: MemoryStore) -> tuple[Check, TrustCounts | None]:
    """Records held at write by the poisoning check, by reason: not a failure (they are
    stored, and kept out of what feeds the agent until released), but worth a look."""
    try:
        counts = await trust_counts.read(store.client)
    except _UNREACHABLE as exc:
        return Check(name="trust", ok=True, detail=f"held counts unreadable: {exc}"), None
    if not counts.held:
        detail = f"no record held at write ({counts.checked} checked)"
        return Check(name="trust", ok=True, detail=detail), counts
    reasons = ", ".join(f"{r} {n}" for r, n in sorted(counts.by_reason.items(), key=_most))
    return (
        Check(
            name="trust",
            ok=True,
            detail=f"{counts.held} of {counts.checked} records held at write ({reasons})",
            fix="review them: GET /agentmemory/quarantine (docs/SECURITY.md)",
        ),
        counts,
    )


def _most(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]
