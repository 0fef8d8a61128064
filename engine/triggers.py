"""Trigger plug-ins as installed (entry-point group `engine.triggers`), for the processes
that host them."""

from engine._triggers import PLUGIN_GROUP, check_kind, plugins

__all__ = ["PLUGIN_GROUP", "check_kind", "plugins"]
