"""The memory worker: `python -m workers.memory`. Composes the write path and, when the
retrieval package is present, the search functions over the same bus."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os

from engine import Worker
from functions.memory.register import register
from triggers.hosting import host as host_triggers
from triggers.hosting import hosted_kinds

worker = Worker("memory", description="agentmemory write path and REST API")
register(worker)


def _add_search() -> None:
    # AGENTMEMORY_SEARCH=off runs the write path alone (tests of the write path, or a
    # deployment that hosts retrieval in another worker).
    if os.environ.get("AGENTMEMORY_SEARCH", "on").lower() in ("0", "off", "false", "no"):
        return
    if importlib.util.find_spec("functions.search") is None:
        return
    # The package's __init__ re-exports nothing: registration lives in its handlers module.
    handlers = importlib.import_module("functions.search.handlers")
    reg = getattr(handlers, "register", None)
    if callable(reg):
        reg(worker)
    else:
        logging.getLogger("workers.memory").info("functions.search.handlers has no register()")


_add_search()
# ENGINE_TRIGGERS=http (config/engine.yaml) serves the REST port from this process as
# well: observe, the hooks' hottest route, then skips the hop through the trigger process.
host_triggers(worker, hosted_kinds(os.environ.get("ENGINE_TRIGGERS")))

if __name__ == "__main__":
    worker.run()
