"""Which trigger plug-ins a process hosts: the trigger worker, or any worker that hosts
some of them itself (ENGINE_TRIGGERS)."""

from __future__ import annotations

from engine import Client, Worker
from engine.triggers import plugins
from triggers.plugin import Plugin


def make_plugin(kind: str) -> Plugin:
    """The plug-in of `kind`, from the `engine.triggers` entry points (pyproject.toml)."""
    found = plugins().get(kind)
    if found is None:
        known = ", ".join(sorted(plugins())) or "none (install the project: pip install -e .)"
        raise SystemExit(f"unknown trigger kind {kind!r}; installed plug-ins: {known}")
    plugin: Plugin = found.load()()
    return plugin


def host(worker: Worker, kinds: list[str]) -> None:
    """Run trigger plug-ins inside `worker`'s process. Their calls to the worker's own
    functions then run in-process (see Client.serve_locally); other calls use the bus.
    Started after the worker's earlier start hooks (its functions are ready by then). While
    the worker drains, the plug-ins still run and their calls go to the other replicas.
    An unknown kind stops the process with a message naming it."""
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


def all_kinds() -> list[str]:
    """Every installed plug-in kind, in a stable order."""
    return sorted(plugins())


def hosted_kinds(value: str | None) -> list[str]:
    """ENGINE_TRIGGERS for a worker: a comma-separated list of plug-in kinds to host."""
    return [k.strip() for k in (value or "").split(",") if k.strip()]
