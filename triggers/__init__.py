"""Trigger plug-ins: each binds an event source to functions, reached only by id over the bus.

A plug-in watches the `engine_triggers` KV bucket for its kind and applies declarations live
(see `triggers.plugin.Plugin`); `workers/triggers` hosts them in a process.
"""
