"""A real three-node NATS cluster on loopback per test that asks for one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ops.cluster.nodes import NatsCluster, loopback_cluster


@pytest.fixture
def nats_cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    cluster = loopback_cluster(tmp_path / "nats").start()
    yield cluster
    cluster.kill()
