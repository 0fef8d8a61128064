"""The lifecycle worker: `python -m workers.lifecycle`. Summaries, consolidation, decay,
auto-forget, lessons and retention, on cron and on demand."""

from __future__ import annotations

from engine import Worker
from functions.graph import mirror
from functions.lifecycle.register import register

worker = Worker(
    "lifecycle", description="agentmemory lifecycle: summaries, consolidation, decay, forgetting"
)
register(worker)
# After register's hooks (they create the buckets): graph queries read this in-memory mirror.
worker.on_start(mirror.start_for)
worker.on_stop(mirror.stop_for)

if __name__ == "__main__":
    worker.run()
