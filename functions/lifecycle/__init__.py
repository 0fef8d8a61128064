"""Memory lifecycle on cron: session summaries and the stale-session sweep, consolidation
into episodic, semantic and procedural tiers, strength decay, auto-forget, lessons, and
the bounded-growth jobs. `functions.lifecycle.register.register(worker)` adds every operation, with
its cron schedule and REST route."""
