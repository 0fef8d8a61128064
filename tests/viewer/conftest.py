"""One product stack for the viewer tests (config/engine.yaml as `make run` starts it, on its
own port block, HOME and secret), shared by every module of this folder."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fixtures import Stack, start_stack


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    st = start_stack(tmp_path_factory.mktemp("viewer"))
    yield st
    st.stop()


@pytest.fixture
def viewer(stack: Stack) -> Iterator[httpx.Client]:
    c = stack.viewed()
    yield c
    c.close()
