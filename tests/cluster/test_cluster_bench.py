"""The cluster fault bench, smaller (`ops/bench/cluster.py --test`, under a minute): under
80/20 observe/search load a NATS node, a memory worker and a whole host are SIGKILLed;
nothing acknowledged is lost or stored twice, searches keep answering and find what was
acknowledged, and a cron trigger firing every second keeps firing once per tick."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fixtures import ROOT

# The bench runs about a minute alone and several on two busy cores: its own deadline, not
# the suite's default 120 s, bounds it.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_faults_under_load_lose_nothing_and_search_stays_available() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "ops" / "bench" / "cluster.py"), "--test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=800,
        check=False,
    )
    lines = out.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("{"), out.stderr[-3000:]
    fig = json.loads(lines[-1])
    assert fig["node_kills"] >= 1 and fig["host_kills"] >= 1 and fig["worker_kills"] >= 1
    assert fig["acked"] > 500, fig
    assert fig["acked_lost"] == 0, fig
    assert fig["duplicates"] == 0, fig
    assert fig["inbox_left"] == 0, fig
    assert fig["search_misses"] == 0, fig  # read-your-writes held through the faults
    assert fig["search_availability"] >= 0.99, fig
    # Cron: one call per tick across the three hosts (at most the one tick whose call ran on
    # the killed host before its acknowledgement could be sent comes again, same key), and
    # still firing once the cluster is whole again.
    assert fig["cron_duplicates"] <= 1, fig
    assert fig["cron_ticks_after_faults"] >= fig["cron_after_faults_s"] - 3, fig
    assert out.returncode == 0, out.stderr[-3000:]
