"""Where an instance lives, for workers and command-line tools: its data dir and named
ports, as the engine config's `layout` says (see engine/_paths.py)."""

from engine._instance import Instance, InstanceBusy, InstanceLock
from engine._paths import (
    ENGINE_PORTS,
    ENV_CONFIG,
    Layout,
    Ports,
    current_layout,
    default_config,
    default_data_dir,
    load_settings,
    read_layout,
)

__all__ = [
    "ENGINE_PORTS",
    "ENV_CONFIG",
    "Instance",
    "InstanceBusy",
    "InstanceLock",
    "Layout",
    "Ports",
    "current_layout",
    "default_config",
    "default_data_dir",
    "load_settings",
    "read_layout",
]
