"""Which trigger plug-ins a process hosts (ENGINE_TRIGGERS, or the trigger worker's
arguments), loaded from the `engine.triggers` entry points: the engine names no plug-in.

A hosted plug-in serves every declaration of its kind, and its calls to functions of the
hosting process run in-process (Client.serve_locally); other calls use the bus. Plug-ins
start after the worker's earlier start hooks (its functions are ready by then); while the
worker drains they still run, and their calls go to the other replicas."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from engine._client import Client
from engine._triggers import plugins
from engine.settings import EngineSettings, declared

ENV_TRIGGERS = declared(EngineSettings, "triggers").name
Hook = Callable[[Client], Awaitable[None]]


class TriggerHost(Protocol):
    """What hosting plug-ins asks of a Worker (engine/_worker.py): its start and stop hooks.
    Named by what is used rather than imported, because the worker imports the runner
    (engine/_runtime.py) that hosts plug-ins through this module. A plug-in's `install` is
    given the Worker itself."""

    def on_start(self, fn: Hook) -> Hook: ...

    def on_stop(self, fn: Hook) -> Hook: ...


def make_plugin(kind: str) -> Any:
    """The plug-in of `kind` (an object with kind, install, start, apply, remove, stop)."""
    found = plugins().get(kind)
    if found is None:
        known = ", ".join(sorted(plugins())) or "none (install the project: pip install -e .)"
        raise SystemExit(f"unknown trigger kind {kind!r}; installed plug-ins: {known}")
    return found.load()()


def all_kinds() -> list[str]:
    """Every installed plug-in kind, in a stable order."""
    return sorted(plugins())


def hosted_kinds(value: str | None) -> list[str]:
    """ENGINE_TRIGGERS for a process: a comma-separated list of plug-in kinds to host."""
    return [k.strip() for k in (value or "").split(",") if k.strip()]


def host(worker: TriggerHost, kinds: list[str]) -> None:
    """Run trigger plug-ins inside `worker`'s process. An unknown kind stops the process
    with a message naming it."""
    if not kinds:
        return
    hosted = [make_plugin(k) for k in kinds]
    for p in hosted:
        p.install(worker)

    @worker.on_start
    async def _start(client: Client) -> None:
        for p in hosted:
            await p.start(client)

    @worker.on_stop
    async def _stop(client: Client) -> None:
        for p in reversed(hosted):
            await p.stop()
