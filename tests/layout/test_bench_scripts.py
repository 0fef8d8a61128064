"""Every benchmark the README lists starts as the README runs it, from a plain shell: no
PYTHONPATH, and no module of ops/bench shadowing the standard library's (a bench named
http.py once made `import http.client` fail for every script beside it). What benches share
lives in the harness: no bench imports another."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.layout.source_imports import imported_files

ROOT = Path(__file__).resolve().parents[2]
BLOCK = ROOT.joinpath("README.md").read_text().split("## Benchmarks and evaluation", 1)[1]
LINES = re.findall(
    r"^\.venv/bin/python ((?:-m )?ops[./]bench[./]\w+(?:\.py)?)((?: --[\w-]+)*)", BLOCK, re.M
)
COMMANDS = {command: flags.split() for command, flags in LINES}
STDLIB = set(sys.stdlib_module_names)
BENCH = ROOT / "ops" / "bench"
SHARED = {
    "harness.py",
    "cluster_workload.py",
    "soak_plot.py",
    "search_corpus.py",
    "session_probe.py",
}
"""What a bench may import of ops/bench: the harness, the cluster benches' workload, the search
corpus, the session-start probe, and the
soak's plot (also a script of its own, redrawing a kept series)."""


@pytest.mark.unit
def test_the_readme_lists_the_benchmarks() -> None:
    assert len(COMMANDS) >= 10, COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_a_listed_benchmark_starts_as_written(command: str) -> None:
    """It starts, and knows the options the README runs it with (compress.py once did not
    know the `--quick` it is listed with)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, *command.split(), "--help"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage" in out.stdout.lower(), out.stdout[-500:]
    missing = [flag for flag in COMMANDS[command] if flag not in out.stdout]
    assert missing == [], f"{command} --help does not know {missing}"


@pytest.mark.unit
def test_no_bench_module_shadows_the_standard_library() -> None:
    names = {p.stem for p in ROOT.joinpath("ops", "bench").glob("*.py")}
    assert not names & STDLIB, names & STDLIB


@pytest.mark.unit
def test_a_bench_imports_the_harness_and_no_other_bench() -> None:
    benches = sorted(p for p in BENCH.glob("*.py") if p.name not in SHARED)
    assert len(benches) > 15
    reached = {
        p.name: sorted(
            f.name for f in imported_files(p) if f.parent == BENCH and f.name not in SHARED
        )
        for p in BENCH.glob("*.py")
    }
    assert {k: v for k, v in reached.items() if v} == {}
