"""The partition bench, smaller (`ops/bench/partition.py --test`, about two minutes): the
three hosts and their NATS nodes each in a network namespace, under observe/search load,
a cron trigger and a lease agent per host; a minority node cut off, the MEM_EVENTS leader
cut off with its own workers, a one-way cut and a throttled link. Skipped, with the
reason, where network namespaces cannot be made."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from ops.netns import available
from tests.fixtures import ROOT

OK, WHY = available()
pytestmark = [
    pytest.mark.skipif(not OK, reason=WHY or "ok"),
    # The bench runs about 180 s on 2 busy cores: past the suite's default 120 s.
    pytest.mark.timeout(600),
    pytest.mark.slow,
]


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "ops" / "bench" / "partition.py"), "--test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    lines = out.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("{"), out.stderr[-3000:]
    fig: dict[str, Any] = json.loads(lines[-1])
    fig["returncode"] = out.returncode
    return fig


def test_network_faults_lose_nothing_acknowledged_and_store_nothing_twice(
    figures: dict[str, Any],
) -> None:
    assert [f["fault"] for f in figures["faults"]] == [
        "minority_node", "leader_node", "one_way", "throttled"
    ], figures  # fmt: skip
    assert figures["acked"] > 500, figures
    assert figures["acked_lost"] == 0 and figures["duplicates"] == 0, figures
    assert figures["inbox_left"] == 0 and figures["observe_gave_up"] == 0, figures
    # (search_misses is reported, not asserted: a cut-off host's replica answers from what
    # its side saw, docs/PERFORMANCE.md)
    # A new leader within the election's seconds when the old one is cut off, either way.
    assert figures["election_s"]["leader_node"] is not None, figures
    assert figures["election_s"]["one_way"] is not None, figures
    assert figures["cron_duplicates"] <= 1, figures
    assert figures["returncode"] == 0, figures


def test_a_lease_holder_cut_off_is_fenced_when_it_comes_back(figures: dict[str, Any]) -> None:
    """Agents cut off with their host keep working on what they hold; their leases run out
    and another agent takes the action; their late completions are refused, and the audit
    shows one committed holder at a time."""
    assert figures["lease_done"] > 20, figures
    assert figures["late_refused"] >= 1, figures
    assert figures["two_holders"] == 0, figures
    assert figures["two_holders_seen_by_agents"] == 0, figures
