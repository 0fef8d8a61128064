"""A malformed setting stops `python -m engine run` at its start, before any process is
spawned, with a message naming the variable, its value and what is accepted: from the
process environment, a worker's `env:` in the config, or the user's settings file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = [sys.executable, "-m", "engine", "run"]
CONFIG = """
layout: {name: probe, env_prefix: PROBE, anchor: 45000, ports: [rest]}
workers:
  - name: example
    module: workers.example
    env: {SEARCH_FRESHNESS_SECONDS: "2"}
"""


def _run(tmp: Path, config: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp / "engine.yaml").write_text(config)
    (tmp / "home").mkdir(exist_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ENGINE_", "PROBE_"))}
    return subprocess.run(
        [*RUN, "--config", str(tmp / "engine.yaml"), "--data-dir", str(tmp / "data")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, "HOME": str(tmp / "home"), "PYTHONPATH": str(ROOT), **env},
    )


def _stopped_before_anything_ran(tmp: Path, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "engine ready" not in done.stderr
    assert not (tmp / "data").exists()  # no pid file, no lock, no nats-server store


def test_a_malformed_boolean_in_the_environment_stops_the_start(tmp_path: Path) -> None:
    done = _run(tmp_path, CONFIG, ENGINE_TRACING="maybe")
    _stopped_before_anything_ran(tmp_path, done)
    assert "error: ENGINE_TRACING='maybe' is not valid: expected true or false" in done.stderr
    assert "the supervisor" in done.stderr and "worker example" in done.stderr


def test_a_malformed_value_in_a_workers_config_env_names_the_worker(tmp_path: Path) -> None:
    done = _run(tmp_path, CONFIG.replace('"2"', '"soon"'))
    _stopped_before_anything_ran(tmp_path, done)
    assert "SEARCH_FRESHNESS_SECONDS='soon'" in done.stderr
    assert "(in worker example)" in done.stderr


def test_every_bad_value_is_named_at_once_the_layouts_too(tmp_path: Path) -> None:
    done = _run(tmp_path, CONFIG, ENGINE_REPLICAS="9", PROBE_INSTANCE="two", TEAM_MODE="open")
    _stopped_before_anything_ran(tmp_path, done)
    assert "ENGINE_REPLICAS='9' is not valid: expected a whole number from 1 to 5" in done.stderr
    assert "PROBE_INSTANCE='two'" in done.stderr  # the layout's own name
    assert "TEAM_MODE='open' is not valid: expected one of private, shared" in done.stderr


def test_the_users_settings_file_is_read_and_checked(tmp_path: Path) -> None:
    settings_file = tmp_path / "home" / ".probe" / ".env"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text("# mine\nexport SNAPSHOT_ENABLED='sometimes'\n")
    done = _run(tmp_path, CONFIG)
    _stopped_before_anything_ran(tmp_path, done)
    assert "SNAPSHOT_ENABLED='sometimes'" in done.stderr
    # the process environment wins over the file
    done = subprocess.run(
        [sys.executable, "-m", "engine", "settings", "--config", str(tmp_path / "engine.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "SNAPSHOT_ENABLED": "on"},
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.unit
def test_a_good_environment_passes_the_check(tmp_path: Path) -> None:
    (tmp_path / "engine.yaml").write_text(CONFIG)
    done = subprocess.run(
        [sys.executable, "-m", "engine", "settings", "--config", str(tmp_path / "engine.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ENGINE_TRACING": " Off "},
    )
    assert (done.returncode, done.stderr) == (0, "")
