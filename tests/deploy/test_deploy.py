"""The deployment recipes of ops/deploy (docs/DEPLOY.md) name only what the product has: the
compose file is checked by `docker compose config` where docker compose exists, and
otherwise read as YAML and held against the product (entry points, their flags, config
keys, ports, environment, the files ops/deploy/render.py writes); the NATS config that
render writes is checked by nats-server itself; the systemd units by `systemd-analyze
verify` where it exists, and against the same product facts everywhere.

The engine config they run (ops/deploy/engine.yaml) is the one `make cluster` and
tests/cluster start on a real three-node cluster."""

from __future__ import annotations

import configparser
import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.config import load_config
from engine.server import server_binary
from ops.deploy import render
from tests.fixtures import ROOT

DEPLOY = ROOT / "ops" / "deploy"
COMPOSE = DEPLOY / "docker-compose.yml"
UNITS = DEPLOY / "systemd"


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def scripts() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(project["project"]["scripts"])


def engine_run_flags() -> set[str]:
    out = subprocess.run([sys.executable, "-m", "engine", "run", "--help"], cwd=ROOT,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return {w.strip(",[]") for w in out.stdout.split() if w.startswith("--")}


def check_engine_argv(argv: list[str]) -> dict[str, str]:
    """`agentmemory-engine run --flag value ...`: the entry point exists, each flag is one
    `run` takes. Returns the flags' values."""
    assert Path(argv[0]).name == "agentmemory-engine", argv
    assert scripts()["agentmemory-engine"] == "engine.__main__:main"
    assert argv[1] == "run", argv
    flags = engine_run_flags()
    values: dict[str, str] = {}
    rest = argv[2:]
    while rest:
        flag = rest.pop(0)
        assert flag in flags, f"{flag} is not a flag of `agentmemory-engine run` ({flags})"
        if flag != "--quiet":
            values[flag] = rest.pop(0)
    return values


def check_engine_config(path: Path) -> None:
    """The config loads as the engine loads it, on three replicas, and every worker it
    names is a module of the product."""
    cfg = load_config(path)
    assert cfg.nats.replicas == 3
    assert cfg.nats.url and len(cfg.nats.url.split(",")) == 3
    for w in cfg.workers:
        for module in w.modules or ([w.module] if w.module else []):
            assert importlib.util.find_spec(module) is not None, f"{w.name}: no module {module}"


# ---- render --------------------------------------------------------------------------------
def test_render_writes_private_secrets_and_a_node_config_nats_server_accepts(
    tmp_path: Path,
) -> None:
    out = tmp_path / "secrets"
    assert render.main(["--out", str(out), "--engine-config"]) == 0
    assert (out.stat().st_mode & 0o777) == 0o700
    for name in ("nats.json", "nats.conf", "rest-secret", "env", "engine.yaml"):
        assert ((out / name).stat().st_mode & 0o777) == 0o600, name
    creds = json.loads((out / "nats.json").read_text())
    conf = (out / "nats.conf").read_text()
    assert creds["password"] in conf
    for node in ("nats-1", "nats-2", "nats-3"):
        assert f"@{node}:{render.ROUTE_PORT}" in conf
    checked = subprocess.run([server_binary(), "-c", str(out / "nats.conf"), "-t"],
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert "is valid" in checked.stdout + checked.stderr
    secret = (out / "rest-secret").read_text().strip()
    assert (out / "env").read_text() == f"AGENTMEMORY_SECRET={secret}\n"
    # Generated once: a second run keeps the password and the secret every host shares.
    assert render.main(["--out", str(out)]) == 0
    assert json.loads((out / "nats.json").read_text()) == creds
    assert (out / "rest-secret").read_text().strip() == secret
    check_engine_config(out / "engine.yaml")
    assert load_config(out / "engine.yaml").nats.credentials == str((out / "nats.json").resolve())


@pytest.mark.unit
def test_render_refuses_fewer_than_three_nodes(tmp_path: Path) -> None:
    assert render.main(["--out", str(tmp_path / "s"), "--nodes", "a,b"]) == 2
    assert not (tmp_path / "s").exists()


# ---- docker compose ------------------------------------------------------------------------
def _has_compose() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.unit
@pytest.mark.skipif(not _has_compose(), reason="docker compose is not installed here")
def test_docker_compose_accepts_the_file(tmp_path: Path) -> None:
    copy = tmp_path / "ops" / "deploy"
    shutil.copytree(DEPLOY, copy, ignore=shutil.ignore_patterns("secrets", "__pycache__"))
    render.main(["--out", str(copy / "secrets")])
    out = subprocess.run(["docker", "compose", "-f", str(copy / "docker-compose.yml"), "config",
                          "-q"], capture_output=True, text=True, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr


@pytest.mark.unit
def test_compose_runs_three_clustered_nodes_from_the_rendered_config() -> None:
    c = compose()
    services = c["services"]
    assert {"nats-1", "nats-2", "nats-3", "engine"} <= set(services)
    conf_target = {s["source"]: s["target"] for s in services["nats-1"]["secrets"]}["nats_config"]
    assert c["secrets"]["nats_config"]["file"] == "./secrets/nats.conf"
    nodes = sorted(n for n in services if n.startswith("nats-"))
    assert tuple(nodes) == render.NODES  # the routes render writes by default
    for name in nodes:
        svc = services[name]
        argv = svc["command"]
        assert Path(server_binary()).name == argv[0]
        assert argv[1:] == ["-c", conf_target, "--name", name]
        # The node's store (render's default store dir) is on the node's volume.
        assert svc["volumes"] == [f"{name}:/data"]
        assert render.STORE_DIR.startswith("/data/")
        assert f"127.0.0.1:{render.MONITOR_PORT}/healthz" in " ".join(svc["healthcheck"]["test"])
    assert services["nats-1"]["build"]["dockerfile"] == "ops/deploy/Dockerfile"
    assert (COMPOSE.parent / services["nats-1"]["build"]["context"]).resolve() == ROOT


def test_compose_engine_names_real_commands_config_ports_and_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    c = compose()
    engine = c["services"]["engine"]
    values = check_engine_argv(engine["command"])
    config_target = {m["source"]: m["target"] for m in engine["configs"]}["engine_config"]
    assert values["--config"] == config_target
    config_file = COMPOSE.parent / c["configs"]["engine_config"]["file"]
    assert config_file == DEPLOY / "engine.yaml"
    check_engine_config(config_file)
    cfg = load_config(config_file)
    assert cfg.nats.url == ",".join(f"nats://nats-{k}:{render.CLIENT_PORT}" for k in (1, 2, 3))
    mounted = {s["source"]: s["target"] for s in engine["secrets"]}
    assert cfg.nats.credentials == mounted["nats_credentials"]
    assert c["secrets"]["nats_credentials"]["file"] == "./secrets/nats.json"
    assert c["secrets"]["rest_secret"]["file"] == "./secrets/rest-secret"
    # The REST secret lands where the product reads it: ~/.agentmemory/secret, HOME as the
    # image sets it.
    from triggers.http.secret import secret_file

    home = _dockerfile_env()["HOME"]
    monkeypatch.setenv("HOME", home)
    assert str(secret_file()) == mounted["rest_secret"]
    assert values["--data-dir"].startswith(home + "/")
    # The environment it sets is read by the product: REST bound for the published port.
    from triggers.http.settings import HttpSettings

    for key, value in engine["environment"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AGENTMEMORY_SECRET", "x")
    settings = HttpSettings.from_env()
    assert settings.host == "0.0.0.0"
    rest = cfg.layout.anchor + cfg.layout.ports.index("rest")
    assert engine["ports"] == [f"127.0.0.1:{rest}:{rest}"]
    assert settings.port == rest


def _dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            for pair in shlex.split(line[4:]):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def test_dockerfile_copies_the_product_and_runs_the_engine() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    copied = [line.split()[1] for line in text.splitlines() if line.startswith("COPY ")]
    for path in copied:
        assert (ROOT / path).exists(), path
    packages = {"engine", "functions", "triggers", "workers"}
    assert packages <= set(copied)
    cmd = json.loads(next(line for line in text.splitlines() if line.startswith("CMD "))[4:])
    check_engine_argv(cmd)
    assert "ops/deploy/secrets" in (ROOT / ".dockerignore").read_text()


# ---- systemd -------------------------------------------------------------------------------
def unit(name: str) -> configparser.ConfigParser:
    p = configparser.ConfigParser(strict=False, interpolation=None)
    p.optionxform = str  # type: ignore[assignment,method-assign]
    p.read(UNITS / name)
    return p


def test_systemd_units_start_the_wheel_nats_server_and_the_engine_entry_point() -> None:
    written = {"nats.conf", "engine.yaml", "env"}  # what render --engine-config writes
    nats = unit("agentmemory-nats.service")
    argv = shlex.split(nats["Service"]["ExecStart"])
    assert Path(argv[0]).name == Path(server_binary()).name
    assert Path(argv[0]).parent == Path("/opt/agentmemory/venv/bin")
    assert argv[1] == "-c" and Path(argv[2]).parent == Path("/etc/agentmemory")
    assert Path(argv[2]).name in written and argv[3:] == ["--name", "%H"]

    eng = unit("agentmemory.service")
    argv = shlex.split(eng["Service"]["ExecStart"])
    assert Path(argv[0]).parent == Path("/opt/agentmemory/venv/bin")
    values = check_engine_argv(argv)
    assert Path(values["--config"]).name in written
    assert Path(eng["Service"]["EnvironmentFile"]).name in written
    # SIGTERM to the supervisor alone, so it can stop its workers in order.
    assert eng["Service"]["KillMode"] == "mixed"
    stop = float(eng["Service"]["TimeoutStopSec"])
    assert stop > load_config(DEPLOY / "engine.yaml").stop_timeout
    state = eng["Service"]["StateDirectory"]
    assert values["--data-dir"].startswith(f"/var/lib/{state}/")
    assert eng["Service"]["Environment"] == f"HOME=/var/lib/{state}"


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    """The units with /opt/agentmemory/venv as this checkout's venv: verify checks that the
    commands exist and reports every directive it cannot parse."""
    venv = Path(sys.executable).parent.parent
    for src in UNITS.glob("*.service"):
        (tmp_path / src.name).write_text(src.read_text().replace("/opt/agentmemory/venv",
                                                                 str(venv)))  # fmt: skip
    out = subprocess.run(["systemd-analyze", "verify", *sorted(map(str, tmp_path.iterdir()))],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr
    ours = [line for line in (out.stdout + out.stderr).splitlines() if str(tmp_path) in line]
    assert not ours, ours


def _glob_match(path: str, pattern: str) -> bool:
    """As setuptools' package-data globs (recursive): `*` stays inside one path segment,
    `**` stands for any number of segments, none included."""
    import fnmatch

    def match(parts: list[str], pats: list[str]) -> bool:
        if not pats:
            return not parts
        if pats[0] == "**":
            return any(match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
        return bool(parts) and fnmatch.fnmatchcase(parts[0], pats[0]) and match(parts[1:], pats[1:])

    return match(path.split("/"), pattern.split("/"))


@pytest.mark.unit
def test_the_wheel_the_image_installs_carries_every_data_file_the_product_reads() -> None:
    """The image runs a wheel install (no source tree on the path of a worker's static
    files): each file of a package that is not Python is declared package data."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared: dict[str, list[str]] = project["tool"]["setuptools"]["package-data"]
    missing = []
    for package in ("engine", "functions", "triggers", "workers"):
        for f in (ROOT / package).rglob("*"):
            if not f.is_file() or f.suffix in (".py", ".pyc", ".md") or "__pycache__" in f.parts:
                continue
            rel = f.relative_to(ROOT / package).as_posix()
            if not any(_glob_match(rel, p) for p in declared.get(package, [])):
                missing.append(f"{package}/{rel}")
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
