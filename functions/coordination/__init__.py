"""Multi-agent coordination: actions, leases, signals, checkpoints, sentinels, routines,
sketches and crystals (docs/COORDINATION.md). `functions.coordination.register.register(worker)`
adds every operation and its triggers."""
