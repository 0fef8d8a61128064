"""Which trigger plug-ins a process hosts (ENGINE_TRIGGERS, or the trigger worker's
arguments), loaded from the `engine.triggers` entry points: the engine names no plug-in.

A hosted plug-in serves every declaration of its kind, and its calls to functions of the
hosting process run in-process (Client.serve_locally); other calls use the bus. Plug-ins
start after the worker's earlier start hooks (its functions are ready by then); while the
worker drains they still run, and their calls go to the other replicas."""

from __future__ import annotations

from typing import Any

from engine._client import Client
from engine._triggers import plugins
from engine._worker import Worker

ENV_TRIGGERS = "ENGINE_TRIGGERS"


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


def host(worker: Worker, kinds: list[str]) -> None:
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
