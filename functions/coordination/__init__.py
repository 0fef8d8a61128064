"""Multi-agent coordination: actions, leases, signals, checkpoints, sentinels, routines,
sketches and crystals (docs/COORDINATION.md), one subpackage per concept (`core`, `wire`,
`service`) over what they share (`records`, `store`, `inputs`); `service` owns the store.
The memory worker serves them (`workers.memory.serve_coordination`, with their triggers)."""
