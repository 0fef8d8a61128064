"""The lifecycle worker: `python -m workers.lifecycle`. Summaries, consolidation, decay,
auto-forget, lessons and retention, on cron and on demand."""

from __future__ import annotations

from engine import Worker
from functions.lifecycle import register

worker = Worker(
    "lifecycle", description="agentmemory lifecycle: summaries, consolidation, decay, forgetting"
)
register(worker)

if __name__ == "__main__":
    worker.run()
