"""The team worker: `python -m workers.team`. Records shared with the team, the mesh that
carries them between instances over a NATS leaf link, git snapshots of memory state, and
the MEMORY.md bridge."""

from __future__ import annotations

from engine import Worker
from functions.team.register import register as register_team

worker = Worker(
    "team", description="agentmemory team memory: sharing, mesh sync, snapshots, MEMORY.md"
)
register_team(worker)

if __name__ == "__main__":
    worker.run()
