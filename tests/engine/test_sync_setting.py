"""`nats.sync`: the embedded server's store sync policy, from the config to nats-server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine._config import ConfigError, load_config
from engine.server import NatsServer, server_binary


@pytest.mark.parametrize("value", ["default", "always", "1s", "250ms", "2m"])
def test_each_sync_policy_renders_a_config_nats_server_accepts(tmp_path: Path, value: str) -> None:
    cfg = tmp_path / "engine.yaml"
    cfg.write_text(f"nats:\n  sync: {value}\n")
    srv = NatsServer(store_dir=tmp_path / "js", sync=load_config(cfg).nats.sync)
    text = srv._config()
    assert ("sync_interval" in text) == (value != "default"), text
    conf = tmp_path / "n.conf"
    conf.write_text(text)
    out = subprocess.run([server_binary(), "-c", str(conf), "-t"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.unit
def test_a_sync_policy_nats_server_would_refuse_is_refused_naming_the_setting(
    tmp_path: Path,
) -> None:
    cfg = tmp_path / "engine.yaml"
    cfg.write_text("nats:\n  sync: sometimes\n")
    with pytest.raises(ConfigError) as ei:
        load_config(cfg)
    assert "nats.sync" in str(ei.value) and "always" in str(ei.value)
