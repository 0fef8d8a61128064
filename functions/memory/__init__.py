"""The memory write path: scrub, compress, observe, sessions, remember, forget, audit,
export/import. The memory worker serves them (`workers.memory`)."""
