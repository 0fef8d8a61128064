"""Memory lifecycle on cron: session summaries and the stale-session sweep, consolidation
into episodic, semantic and procedural tiers, strength decay, auto-forget and
the bounded-growth jobs. The lifecycle worker serves them
(`workers.lifecycle`, with their cron schedules)."""
