"""Function counters (upstream's `FunctionMetrics`, `status.functions`, and
`POST metrics/reset`, 0.9.34 #1794), read from what every worker reports in NATS micro's
`$SRV.STATS`: calls, errors and busy time per function, per worker process.

A process's counters only grow until it restarts, so a reset cannot zero them: it stores
each running process's figures as a baseline (KV `mem_metrics`), and the counters shown
are the growth since. A process started after the reset has no baseline and counts from
zero, as it should."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import Client, service_infos

METRICS_BUCKET = "mem_metrics"
BASELINE_KEY = "baseline"
NEEDS_MODEL = frozenset({"mem::compress-model"})
"""Functions that do nothing useful without a model provider (upstream's offWithoutLlm)."""


class Figures(msgspec.Struct, array_like=True):
    calls: int = 0
    errors: int = 0
    busy_ms: float = 0.0


class Baseline(msgspec.Struct):
    at: str = ""
    instances: dict[str, dict[str, Figures]] = msgspec.field(default_factory=dict)
    """Worker process (its micro instance id) -> function id -> figures at the reset."""


class FunctionMetric(msgspec.Struct, rename="camel", kw_only=True):
    function_id: str
    total_calls: int
    success_count: int
    failure_count: int
    avg_latency_ms: float
    failure_rate: float
    off_without_llm: bool


class MetricsResetOut(msgspec.Struct, kw_only=True):
    success: bool
    cleared: int
    """Functions whose counters were cleared (those called since the last reset)."""


async def current(client: Client) -> dict[str, dict[str, Figures]]:
    """Every worker process's figures now: instance id -> function id -> figures."""
    out: dict[str, dict[str, Figures]] = {}
    for info in await service_infos(client, verb="STATS"):
        if not isinstance(info, dict):
            continue
        instance = str(info.get("id") or "")
        for ep in info.get("endpoints") or []:
            data: Any = (ep or {}).get("data") or {}
            fid = data.get("function_id") if isinstance(data, dict) else None
            if not instance or not fid:
                continue
            out.setdefault(instance, {})[str(fid)] = Figures(
                calls=int(data.get("calls") or 0),
                errors=int(data.get("errors") or 0),
                busy_ms=float(data.get("busy_ms") or 0.0),
            )
    return out


async def baseline(client: Client) -> Baseline:
    state = await client.bucket(METRICS_BUCKET)
    raw: Any = await state.get(BASELINE_KEY)
    try:
        return msgspec.convert(raw, Baseline) if raw is not None else Baseline()
    except msgspec.ValidationError:  # a baseline of another version: start over
        return Baseline()


def _since(now: Figures, then: Figures | None) -> Figures:
    if then is None or now.calls < then.calls:  # no baseline, or a restarted process
        return now
    return Figures(now.calls - then.calls, now.errors - then.errors, now.busy_ms - then.busy_ms)


async def function_metrics(client: Client, *, model_configured: bool) -> list[FunctionMetric]:
    now, base = await current(client), await baseline(client)
    summed: dict[str, Figures] = {}
    for instance, figures in now.items():
        before = base.instances.get(instance, {})
        for fid, f in figures.items():
            d = _since(f, before.get(fid))
            s = summed.setdefault(fid, Figures())
            s.calls, s.errors, s.busy_ms = (
                s.calls + d.calls,
                s.errors + d.errors,
                s.busy_ms + d.busy_ms,
            )
    return [
        FunctionMetric(
            function_id=fid,
            total_calls=f.calls,
            success_count=max(0, f.calls - f.errors),
            failure_count=f.errors,
            avg_latency_ms=round(f.busy_ms / f.calls, 3) if f.calls else 0.0,
            failure_rate=round(f.errors / f.calls, 4) if f.calls else 0.0,
            off_without_llm=fid in NEEDS_MODEL and not model_configured,
        )
        for fid, f in sorted(summed.items())
        if f.calls
    ]


async def reset(client: Client, at: str) -> MetricsResetOut:
    now, base = await current(client), await baseline(client)
    cleared = {
        fid
        for instance, figures in now.items()
        for fid, f in figures.items()
        if _since(f, base.instances.get(instance, {}).get(fid)).calls
    }
    state = await client.bucket(METRICS_BUCKET)
    await state.put(BASELINE_KEY, Baseline(at=at, instances=now))
    return MetricsResetOut(success=True, cleared=len(cleared))
