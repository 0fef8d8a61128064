"""Memory tests: a real nats-server and a real memory worker process per test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def memory_worker(spawn: Any, tmp_path: Path) -> Callable[..., Any]:
    """Start `python -m workers.memory` with its inbox under the test's tmp dir."""

    def start(**env: str) -> Any:
        e = {"AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"), "HOME": str(tmp_path / "home")}
        e.update(env)
        return spawn("workers.memory", env=e)

    return start
