"""ENGINE_REPLICAS, the JetStream replica count of what a process creates, is checked."""

from __future__ import annotations

import pytest

from engine._connect import default_replicas

ENV_REPLICAS = "ENGINE_REPLICAS"

pytestmark = pytest.mark.unit


def test_the_replica_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_REPLICAS, raising=False)
    assert default_replicas() == 1
    for bad in ("three", "0", "7"):
        monkeypatch.setenv(ENV_REPLICAS, bad)
        with pytest.raises(ValueError, match=ENV_REPLICAS):
            default_replicas()
