"""The kernel every family stands on: stored records and MEM_EVENTS events, ids and
times, the store primitives, the owned-service scaffolding, views, names on the wire,
secret scrubbing, settings and the model client. It imports no family."""
