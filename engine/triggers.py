"""Trigger plug-ins as installed (entry-point group `engine.triggers`), and hosting them in
a process (`ENGINE_TRIGGERS`)."""

from engine._plugins import ENV_TRIGGERS, all_kinds, host, hosted_kinds, make_plugin
from engine._triggers import PLUGIN_GROUP, check_kind, plugins

__all__ = [
    "ENV_TRIGGERS",
    "PLUGIN_GROUP",
    "all_kinds",
    "check_kind",
    "host",
    "hosted_kinds",
    "make_plugin",
    "plugins",
]
