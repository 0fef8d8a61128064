"""The knowledge graph: typed entities (files, symbols, packages, errors, commands,
concepts) linked by co-occurrence and supersession, with time validity and capped
provenance, kept in the `mem_graph` KV bucket and fed from MEM_EVENTS by the lifecycle."""
