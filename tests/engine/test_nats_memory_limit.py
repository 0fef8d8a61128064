"""`nats.memory_limit`: the embedded nats-server runs with it as GOMEMLIMIT; a value Go's
runtime would refuse is a configuration error naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import ConfigError, load_config
from tests.fixtures import EXAMPLE_CONFIG


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode(errors="replace").split("=", 1) for e in raw if b"=" in e)


def _nats_pid(data_dir: Path) -> int:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"nats-server") and str(data_dir).encode() in b" ".join(argv):
            return int(proc.name)
    raise AssertionError(f"no nats-server of {data_dir} found")


def test_the_embedded_server_gets_the_memory_limit_as_gomemlimit(
    engine_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    eng = engine_factory("nats:\n  memory_limit: 200MiB\n" + EXAMPLE_CONFIG).start()
    assert _environ(_nats_pid(eng.data_dir)).get("GOMEMLIMIT") == "200MiB"


@pytest.mark.unit
def test_the_shipped_default_sets_a_limit_and_null_sets_none(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    assert load_config(root / "config" / "engine.yaml").nats.memory_limit == "160MiB"
    off = tmp_path / "off.yaml"
    off.write_text("nats:\n  memory_limit: null\n")
    assert load_config(off).nats.memory_limit is None


@pytest.mark.unit
@pytest.mark.parametrize("bad", ["320MB", "lots", "0", "-5MiB", "1.5GiB"])
def test_a_memory_limit_go_would_refuse_is_a_config_error(tmp_path: Path, bad: str) -> None:
    cfg = tmp_path / "engine.yaml"
    cfg.write_text(f"nats:\n  memory_limit: {bad}\n")
    with pytest.raises(ConfigError, match=r"nats\.memory_limit"):
        load_config(cfg)
