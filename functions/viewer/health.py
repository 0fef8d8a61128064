"""The health the viewer shows: the memory worker's status checks, and the team's links
(`mem::mesh-list`: each peer's round trip, or why there is none), asked over the bus so a
missing worker is a failing check, not an error."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import Client, FunctionError
from engine import tracing as _tracing
from functions.memory.wire import Check

STATUS_TIMEOUT = 3.0


class HealthView(msgspec.Struct, kw_only=True):
    status: str
    """ok, degraded, or unknown when the status could not be read."""
    checks: list[Check]
    held: dict[str, int] = msgspec.field(default_factory=dict)
    """Records held at write by the poisoning check, by reason (the `trust` check says the
    same in words)."""


def _team_checks(doc: Any) -> list[Check]:
    peers = doc.get("peers") or []
    me, team = doc.get("self", ""), doc.get("team", "")
    if not peers:
        detail = (
            f"team {team}: this instance ({me}) has no peers"
            if me and me != "local"
            else f"team {team}: not linked to other machines (no JetStream domain)"
        )
        return [Check(name="team", ok=True, detail=detail)]
    out = []
    for p in peers:
        trip, ago = p.get("roundTripMs"), p.get("echoSeconds")
        if trip is not None:
            detail = f"round trip {trip:g} ms, {ago:.0f} s ago; status {p.get('status')}"
            out.append(Check(name=f"team link {p.get('name')}", ok=True, detail=detail))
        else:
            out.append(
                Check(
                    name=f"team link {p.get('name')}",
                    ok=False,
                    detail=str(p.get("reason") or f"status {p.get('status')}"),
                    fix="run `POST /agentmemory/mesh/sync` on both machines; docs/TEAM.md, "
                    "checking both directions",
                )
            )
    return out


async def health_of(client: Client) -> HealthView:
    """`mem::status` and the team's links as the viewer shows them; `unknown` when the
    memory worker is away."""
    return (await health_and_report(client))[0]


async def health_and_report(client: Client) -> tuple[HealthView, dict[str, Any] | None]:
    """The health as the viewer shows it, and the status report it was read from (None
    when the memory worker did not answer)."""
    try:
        with _tracing.untraced():
            doc = await client.call("mem::status", None, timeout=STATUS_TIMEOUT)
        checks = msgspec.convert(doc.get("checks", []), list[Check])
        # upstream's levels (ok, info, warn, error) as the viewer's ok / degraded
        level = str(doc.get("status", "unknown"))
        status = "ok" if level in ("ok", "info") else "degraded"
        counts = doc.get("trust") or {}
        held = msgspec.convert(counts.get("byReason") or {}, dict[str, int])
    except (FunctionError, msgspec.ValidationError, AttributeError) as exc:
        detail = exc.message if isinstance(exc, FunctionError) else str(exc)
        return HealthView(
            status="unknown",
            checks=[
                Check(
                    name="memory",
                    ok=False,
                    detail=f"the memory worker did not answer: {detail}",
                    fix="start the engine (`agentmemory start`) and check `agentmemory status`",
                )
            ],
        ), None
    try:
        with _tracing.untraced():
            mesh = await client.call("mem::mesh-list", None, timeout=STATUS_TIMEOUT)
        team = _team_checks(mesh)
    except (FunctionError, AttributeError) as exc:
        detail = exc.message if isinstance(exc, FunctionError) else str(exc)
        team = [Check(name="team", ok=False, detail=f"the team worker did not answer: {detail}",
                      fix="check `agentmemory status`")]  # fmt: skip
    if status == "ok" and not all(c.ok for c in team):
        status = "degraded"
    return HealthView(status=status, checks=[*checks, *team], held=held), doc if isinstance(
        doc, dict
    ) else None
