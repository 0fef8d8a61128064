"""tests/fixtures.py's own promises: a test marked `unit` that starts a server fails, naming
what it started (also when it catches the error); ports handed out are free and never twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import ROOT, free_port, free_port_block

pytestmark = pytest.mark.unit

MISMARKED = """
import subprocess
import pytest

@pytest.mark.unit
def test_starts_a_server():
    subprocess.Popen(["nats-server", "--version"])

@pytest.mark.unit
def test_starts_a_worker_and_swallows_the_error():
    try:
        subprocess.run(["python", "-m", "workers.memory"])
    except Exception:
        pass

@pytest.mark.unit
def test_runs_git():
    subprocess.run(["git", "--version"], capture_output=True, check=True)
"""


def test_a_unit_test_that_starts_a_server_fails_naming_it(tmp_path: Path) -> None:
    (tmp_path / "test_mismarked.py").write_text(MISMARKED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.fixtures", "-p", "no:cacheprovider",
         "-q", "-rf", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 failed, 1 passed" in out.stdout, out.stdout
    assert "test_starts_a_server is marked `unit` but started 'nats-server'" in out.stdout
    # caught by the test itself, it fails all the same
    assert "marked `unit` but started 'python -m workers.memory'" in out.stdout


def test_ports_are_free_and_never_handed_out_twice() -> None:
    seen: set[int] = set()
    for _ in range(50):
        anchor = free_port_block(6)
        block = set(range(anchor, anchor + 6))
        assert not block & seen
        seen |= block
    port = free_port()
    assert port not in seen and 20000 <= port < 32000
