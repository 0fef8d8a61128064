"""The memory write path: scrub, compress, observe, sessions, remember, forget, audit,
export/import. `functions.memory.register.register(worker)` adds every operation."""
