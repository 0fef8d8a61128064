"""The memory worker: `python -m workers.memory`. Composes the write path and, when the
retrieval package is present, the search functions over the same bus."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os

from engine import Worker
from functions.coordination.register import register as register_coordination
from functions.memory.register import register

worker = Worker("memory", description="agentmemory write path and REST API")
register(worker)
register_coordination(worker)


def _add_search() -> None:
    # AGENTMEMORY_SEARCH=off runs the write path alone (tests of the write path, or a
    # deployment that hosts retrieval in another worker).
    if os.environ.get("AGENTMEMORY_SEARCH", "on").lower() in ("0", "off", "false", "no"):
        return
    if importlib.util.find_spec("functions.search") is None:
        logging.getLogger("workers.memory").info("no functions.search: write path only")
        return
    importlib.import_module("functions.search.handlers").register(worker)


_add_search()
if __name__ == "__main__":
    worker.run()
