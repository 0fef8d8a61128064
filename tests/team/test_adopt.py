"""An instance first run without a domain, then given one, takes over what it shared as
`local` even when the start that changed its TEAM stream's subjects was cut off before it
announced those records again (a crash or a timeout under load): the next start adopts
them. Before the fix the subjects said "local" no more, so the next start adopted nothing
and peers never got the earlier shares (CI, tests/team/test_truth.py)."""

from __future__ import annotations

import pytest

from engine import Client
from functions.kernel.records import Memory
from functions.team.records import TEAM_STREAM
from functions.team.team_service import ADOPTING_KEY, TeamService


class CutOff(TeamService):
    """A start that fails right after its TEAM stream was brought to the new subjects."""

    async def _adopt(self, previous: str) -> None:
        raise RuntimeError("the worker died here")


async def test_a_start_cut_off_before_adopting_adopts_on_the_next(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_ID", "dev-team")
    monkeypatch.delenv("ENGINE_NATS_DOMAIN", raising=False)
    first = TeamService()
    await first.start(client)
    memory = Memory(id="mem_before", content="the queue retries after 30 s", version=1,
                    created_at="2026-12-01T10:00:00Z")  # fmt: skip
    await first.store.save_memory(memory)
    await first.book.share(memory, "memory")
    await first.stop(client)

    monkeypatch.setenv("ENGINE_NATS_DOMAIN", "b")
    cut = CutOff()
    with pytest.raises(RuntimeError):
        await cut.start(client)
    stream = client.stream(TEAM_STREAM)
    assert await stream.stored_subjects() == ["team.log.b.>"]  # the subjects changed
    assert [i.origin for i in await cut.book.items()] == ["local"]  # nothing adopted yet

    again = TeamService()
    await again.start(client)
    try:
        [item] = await again.book.items()
        assert item.origin == "b" and item.memory is not None and item.memory.instance == "b"
        announced = await stream.last_seq(f"team.log.b.{memory.id}")
        assert announced > 0, "the earlier share was not announced under the new origin"
        assert await stream.last_seq(f"team.log.local.{memory.id}") == 0  # old one purged
        assert await again.book.kv.get(ADOPTING_KEY) is None
    finally:
        await again.stop(client)
