"""The cluster fault bench, smaller (`ops/bench/cluster.py --test`, about a minute): under
80/20 observe/search load a NATS node, a memory worker and a whole host are SIGKILLed;
nothing acknowledged is lost or stored twice, and searches keep answering."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_faults_under_load_lose_nothing_and_search_stays_available() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "ops" / "bench" / "cluster.py"), "--test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
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
    assert out.returncode == 0, out.stderr[-3000:]
