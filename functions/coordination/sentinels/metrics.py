"""What a threshold sentinel measures: a function's calls, summed over every worker that
serves it, as each reports them in its `$SRV.STATS` (NATS micro) reply. Upstream reads the
`totalCalls` of its own per-function metrics record; ours are the workers' own counters,
which count from each worker process's start.

A metric that no worker serves has no figure (upstream: no metrics record), so a threshold
on it is not evaluated rather than read as zero."""

from __future__ import annotations

from typing import Any

from engine import Client, service_infos

OPERATORS = {
    "gt": lambda cur, v: cur > v,
    "lt": lambda cur, v: cur < v,
    "eq": lambda cur, v: cur == v,
}


async def function_calls(client: Client) -> dict[str, int]:
    """Calls per function id, every replica's summed."""
    calls: dict[str, int] = {}
    for reply in await service_infos(client, quiet=0.1, limit=1.0, verb="STATS"):
        if not isinstance(reply, dict):
            continue
        for ep in reply.get("endpoints") or []:
            data: Any = (ep or {}).get("data") or {}
            fid = data.get("function_id") if isinstance(data, dict) else None
            if isinstance(fid, str) and fid:
                calls[fid] = calls.get(fid, 0) + int(data.get("calls") or 0)
    return calls


def crossed(config: dict[str, Any], calls: dict[str, int]) -> dict[str, Any] | None:
    """The result a threshold sentinel fires with, None while it holds (or has no figure)."""
    metric, op, value = config.get("metric"), config.get("operator"), config.get("value")
    test = OPERATORS.get(str(op))
    if not isinstance(metric, str) or metric not in calls or test is None:
        return None
    current = calls[metric]
    if not isinstance(value, int | float) or not test(current, value):
        return None
    return {
        "reason": "threshold_crossed",
        "metric": metric,
        "currentValue": current,
        "threshold": value,
        "operator": op,
    }
