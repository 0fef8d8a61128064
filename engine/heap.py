"""How a worker process's memory is handed back to the system (glibc): for workers whose
own data structures call for it (the search index)."""

from engine._heap import map_large_allocations

__all__ = ["map_large_allocations"]
