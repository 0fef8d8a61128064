"""Routines: a frozen template of 5 steps with dependencies, run to done by 3 agent
processes through `next`, `leases/acquire` and `leases/release`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.fixtures import SECRET

ROOT = Path(__file__).resolve().parents[2]
A = "/agentmemory/"
STEPS = [
    {"order": 0, "title": "design the schema"},
    {"order": 1, "title": "write the migration", "dependsOn": [0]},
    {"order": 2, "title": "write the API", "dependsOn": [0]},
    {"order": 3, "title": "write the tests", "dependsOn": [1, 2]},
    {"order": 4, "title": "ship it", "dependsOn": [3]},
]


async def test_a_routine_of_five_steps_runs_to_done_by_three_agents(
    rest: httpx.AsyncClient,
) -> None:
    r = await rest.post(A + "routines", json={"name": "feature", "steps": STEPS})
    assert r.status_code == 201, r.text
    routine = r.json()["routine"]
    r = await rest.post(
        A + "routines/run",
        json={"routineId": routine["id"], "project": "feature", "initiatedBy": "lead"},
    )
    assert r.status_code == 201, r.text
    run = r.json()["run"]
    assert r.json()["actionsCreated"] == 5
    status = (await rest.get(A + "routines/status", params={"runId": run["id"]})).json()
    assert status["progress"] == {
        "total": 5,
        "done": 0,
        "active": 0,
        "pending": 1,
        "blocked": 4,
        "cancelled": 0,
    }

    agents = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.coordination.agent",
                str(rest.base_url),
                SECRET,
                f"agent-{n}",
                "feature",
            ],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for n in range(3)
    ]
    done: list[str] = []
    try:
        for p in agents:
            out, _ = p.communicate(timeout=60)
            assert p.returncode == 0
            done += [ln.split()[1] for ln in out.decode().splitlines() if ln.startswith("DONE ")]
    finally:
        for p in agents:
            if p.poll() is None:
                p.kill()
    assert sorted(done) == sorted(run["actionIds"])  # each step done once

    status = (await rest.get(A + "routines/status", params={"runId": run["id"]})).json()
    assert status["run"]["status"] == "completed" and status["progress"]["done"] == 5
    assert set(status["run"]["stepStatus"].values()) == {"done"}
    # Each step completed after every step it depends on.
    finished = {}
    for aid in run["actionIds"]:
        a = (await rest.get(A + "actions/get", params={"actionId": aid})).json()["action"]
        finished[a["metadata"]["stepOrder"]] = a["completedAt"]
    for step in STEPS:
        for dep in step.get("dependsOn", []):  # type: ignore[attr-defined]
            assert finished[dep] < finished[step["order"]]


async def test_routine_definitions_are_checked(rest: httpx.AsyncClient) -> None:
    for steps, field in [
        ([], "steps"),
        ([{"title": "a", "dependsOn": [5]}], "steps[0].dependsOn"),
        (
            [
                {"order": 0, "title": "a", "dependsOn": [1]},
                {"order": 1, "title": "b", "dependsOn": [0]},
            ],
            "steps",
        ),
        ([{"order": 1, "title": "a"}, {"order": 1, "title": "b"}], "steps"),
    ]:
        r = await rest.post(A + "routines", json={"name": "bad", "steps": steps})
        assert r.status_code in (400, 422), (steps, r.text)  # malformed, or impossible
        assert r.json()["error"]["field"] == field, r.text
    r = await rest.post(A + "routines/run", json={"routineId": "rtn_nope"})
    assert r.status_code == 404 and r.json()["error"]["field"] == "routineId"
