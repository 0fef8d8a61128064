"""The memory write path: scrub, compress, observe, sessions, remember, forget, audit,
export/import. `register(worker)` adds every operation as a bus function and a REST route."""

from functions.memory.register import register
from functions.memory.service import MemoryService

__all__ = ["MemoryService", "register"]
