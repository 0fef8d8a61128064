"""Memory lifecycle on cron: session summaries and the stale-session sweep, consolidation
into episodic, semantic and procedural tiers, strength decay, auto-forget, lessons, and
the bounded-growth jobs. `register(worker)` adds every operation as a bus function, with
its cron schedule and REST route."""

from functions.lifecycle.register import register
from functions.lifecycle.service import LifecycleService

__all__ = ["LifecycleService", "register"]
