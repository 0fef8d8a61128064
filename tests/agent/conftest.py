"""A stack per test, or one per module for tests that only read from it or add to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.cli_stack import CliStack, new_stack, teardown


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[CliStack]:
    st = new_stack(tmp_path)
    yield st
    teardown(st)


@pytest.fixture(scope="module")
def running_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliStack]:
    """One started stack for a module's tests that only read from it or add to it."""
    st = new_stack(tmp_path_factory.mktemp("stack"))
    st.start()
    yield st
    teardown(st)
