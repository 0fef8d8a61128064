"""Multi-agent coordination: actions, leases, signals, checkpoints, sentinels, routines,
sketches and crystals (docs/COORDINATION.md). The memory worker serves them
(`workers.memory.serve_coordination`, with their triggers)."""
