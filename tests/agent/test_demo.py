"""`agentmemory demo`, `export` and `import`: what a user tries right after `start`."""

from __future__ import annotations

import json

import pytest

from tests.agent.cli_stack import CliStack
from workers.cli.demo import QUERIES, SESSIONS

# start, demo (three sessions, their searches), export, a second stack's import: over the
# default 120 s on a machine loaded by other work.
pytestmark = pytest.mark.timeout(300)


def test_demo_seeds_three_sessions_whose_searches_find_them_and_export_reimports(
    stack: CliStack,
) -> None:
    stack.start()
    out = stack.cli("demo").stdout
    assert "seeded 3 sessions, 15 events" in out
    for query in QUERIES:
        assert f"search: {query}" in out
    for session, events in SESSIONS.items():
        assert len(stack.observations(session)) == len(events)

    with stack.rest() as c:
        hits = {
            q: c.post("/agentmemory/search", json={"query": q, "limit": 3}).text for q in QUERIES
        }
    assert "demo-jwt-auth" in hits[QUERIES[0]]
    assert "demo-n-plus-one" in hits[QUERIES[1]]
    assert "demo-rate-limit" in hits[QUERIES[2]]

    stack.cli("demo")  # a second run stores no event twice
    assert all(len(stack.observations(s)) == len(e) for s, e in SESSIONS.items())

    dump = stack.home / "export.json"
    stack.cli("export", "-o", str(dump), *_target(stack))
    doc = json.loads(dump.read_text())
    assert {s["id"] for s in doc["sessions"]} >= set(SESSIONS)
    res = stack.cli("import", str(dump), "--strategy", "skip", *_target(stack))
    assert res.returncode == 0
    assert all(len(stack.observations(s)) == len(e) for s, e in SESSIONS.items())
    bad = stack.home / "bad.json"
    bad.write_text("{not json")
    refused = stack.cli("import", str(bad), *_target(stack), check=False)
    assert refused.returncode == 2 and "not valid JSON" in refused.stderr


def _target(stack: CliStack) -> list[str]:
    return ["--data-dir", str(stack.data_dir), "--port", str(stack.port)]
