"""`python -m engine.host <module> [<module> ...]`: several workers in one process.

Each module names a worker: its `worker` attribute (a `Worker`) or a `build()` that makes
one; a package stands for its `__main__` module (`workers.lifecycle`). They share one bus
connection and one Client (their calls to each other run in-process) and the trigger
plug-ins ENGINE_TRIGGERS names. A laptop then runs a handful of processes instead of one
per worker; config/engine.yaml says which workers share one (`modules:`)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

from engine._runtime import run_workers
from engine._worker import Worker


def load_worker(name: str) -> Worker:
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise SystemExit(f"no module {name!r} to host")
    if spec.submodule_search_locations is not None:  # a package: its __main__ is the worker
        name += ".__main__"
    module = importlib.import_module(name)
    found = getattr(module, "worker", None)
    if isinstance(found, Worker):
        return found
    build = getattr(module, "build", None)
    if callable(build):
        made = build()
        if isinstance(made, Worker):
            return made
    raise SystemExit(f"{name} defines no `worker` (a Worker) nor a `build()` returning one")


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python -m engine.host <module> [<module> ...]")
    run_workers([load_worker(m) for m in argv])


if __name__ == "__main__":
    main(sys.argv[1:])
