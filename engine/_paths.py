"""Where an instance lives: its data dir and its block of ports, as the config's `layout`
names them.

The engine knows two ports of its own, `nats` and `nats_monitor`; every other port of the
block, the data dir's folder name and the prefix of the settings that override them come
from `layout:` in the engine's config (config/engine.yaml). Port i of the list is
anchor + i; `--port N` moves the anchor, `--instance K` shifts the block by 100×K and gives
the instance its own data dir (`<root>/instance-K`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import msgspec
import yaml

from engine import settings

ENGINE_PORTS = ("nats", "nats_monitor")
ENV_CONFIG = settings.declared(settings.WorkerIdentity, "config").name
"""The config file a process reads its layout from (set by the supervisor for workers)."""
CONFIG_ENTRY_POINTS = "engine.config"
"""Entry points naming an installed distribution's default config file (a path object or
string), how a wheel install, with no checkout around it, finds one."""


@functools.cache
def default_config() -> Path:
    """The checkout's `config/engine.yaml`; installed, the file the first `engine.config`
    entry point names."""
    checkout = Path(__file__).resolve().parents[1] / "config" / "engine.yaml"
    if checkout.exists():
        return checkout
    from importlib.metadata import entry_points

    for ep in entry_points(group=CONFIG_ENTRY_POINTS):
        try:
            path = Path(str(ep.load()))
        except (ImportError, AttributeError):
            continue
        if path.exists():
            return path
    return checkout


class Layout(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str = "engine"
    """Folder of the data dir (`$XDG_DATA_HOME/<name>`) and of user settings
    (`~/.<name>/.env`)."""
    env_prefix: str = "ENGINE"
    """`<PREFIX>_DATA_DIR`, `<PREFIX>_PORT` (the anchor) and `<PREFIX>_INSTANCE` override
    the defaults; workers get `<PREFIX>_DATA_DIR` and `<PREFIX>_<NAME>_PORT` per port."""
    anchor: int = 4222
    ports: list[str] = msgspec.field(default_factory=lambda: list(ENGINE_PORTS))
    """Names of the block's ports in order; `nats` and `nats_monitor` are added if absent."""

    def __post_init__(self) -> None:
        for p in ENGINE_PORTS:
            if p not in self.ports:
                self.ports.append(p)
        if len(set(self.ports)) != len(self.ports):
            raise ValueError(f"layout.ports names a port twice: {self.ports}")

    def env(self, name: str) -> str:
        """The name of the setting `<PREFIX>_<NAME>`."""
        return f"{self.env_prefix}_{name.upper()}"

    def port_env(self, port: str) -> str:
        return self.env(f"{port}_PORT")

    def settings_file(self) -> Path:
        return Path.home() / f".{self.name}" / ".env"

    def registry_dir(self) -> Path:
        """Where each running instance notes its data dir (`<K>.json`), so a tool given
        only `--instance K` finds an instance started with another data dir."""
        return Path.home() / f".{self.name}" / "instances"

    def data_root(self) -> Path:
        given = settings.read(self.setting("DATA_DIR"))
        if given is not None:
            return Path(given)
        xdg = settings.engine_settings().data_home
        return (xdg or Path.home() / ".local" / "share") / self.name

    def data_dir(self, instance: int = 0) -> Path:
        root = self.data_root()
        return root if instance == 0 else root / f"instance-{instance}"

    def setting(self, name: str) -> settings.Setting:
        """The declaration of `<PREFIX>_<NAME>`: DATA_DIR, INSTANCE, PORT (the anchor) or
        `<PORT>_PORT`, one of the block's."""
        names = (self.env(name),)
        if name == "DATA_DIR":
            doc = "The instance's data dir (the supervisor sets it for its workers)."
            home = f"<XDG_DATA_HOME>/{self.name}"
            return settings.Setting(names, "path", None, doc, shown=home)
        if name == "INSTANCE":
            doc = "The instance: its ports are shifted by 100 per instance, its data dir is "
            doc += "`instance-<K>` of the data dir."
            return settings.Setting(names, "int", 0, doc, lo=0)
        if name == "PORT":
            doc = "The first port of the instance's block (the others follow it)."
            return settings.Setting(names, "int", None, doc, lo=1, hi=65535, shown=str(self.anchor))
        port = name.removesuffix("_PORT").lower()
        doc = f"The instance's `{port}` port (the supervisor sets it for its workers)."
        return settings.Setting(names, "int", None, doc, lo=1, hi=65535, shown="from the block")

    def variables(self) -> list[settings.Setting]:
        """Every variable the layout names, for the start's check and docs/CONFIG.md."""
        named = ["DATA_DIR", "INSTANCE", "PORT", *(f"{p.upper()}_PORT" for p in self.ports)]
        return [self.setting(n) for n in named]

    def given_port(self, port: str) -> int | None:
        """`<PREFIX>_<PORT>_PORT` when set (the supervisor gives each worker its instance's
        ports), else None."""
        value: int | None = settings.read(self.setting(f"{port.upper()}_PORT"))
        return value

    def default_instance(self) -> int:
        instance: int = settings.read(self.setting("INSTANCE"))
        return instance

    def ports_for(self, instance: int = 0, anchor: int | None = None) -> Ports:
        base = anchor or settings.read(self.setting("PORT")) or self.anchor
        base += 100 * instance
        return Ports({name: base + i for i, name in enumerate(self.ports)})


class Ports:
    """An instance's ports by name: `ports.nats`, `ports["rest"]`."""

    def __init__(self, named: dict[str, int]) -> None:
        self._named = dict(named)

    def __getattr__(self, name: str) -> int:
        try:
            return self._named[name]
        except KeyError:
            raise AttributeError(f"no port named {name!r} in the layout") from None

    def __getitem__(self, name: str) -> int:
        return self._named[name]

    def __contains__(self, name: object) -> bool:
        return name in self._named

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ports) and other._named == self._named

    def __repr__(self) -> str:
        return f"Ports({self._named})"

    def as_dict(self) -> dict[str, int]:
        return dict(self._named)

    @property
    def anchor(self) -> int:
        return min(self._named.values())


def read_layout(path: str | os.PathLike[str] | None) -> Layout:
    """The `layout:` of a config file; the engine's own defaults without one."""
    if path is None or not Path(path).exists():
        return Layout()
    raw: Any = yaml.safe_load(Path(path).read_text()) or {}
    section = raw.get("layout") if isinstance(raw, dict) else None
    return msgspec.convert(section or {}, Layout)


@functools.cache
def current_layout() -> Layout:
    """This process's layout: from `ENGINE_CONFIG`, else the default config file."""
    return read_layout(settings.worker_identity().config or default_config())


def default_data_dir(instance: int = 0) -> Path:
    return current_layout().data_dir(instance)


def load_settings(layout: Layout | None = None) -> None:
    """Read the user's settings file (`~/.<name>/.env`) into the environment; the process
    environment wins."""
    path = (layout or current_layout()).settings_file()
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        value = value.strip().strip('"').strip("'")
        settings.set_default(key, value)
