"""Host trigger plug-ins in one process: `python -m workers.trigger_plugins [kind ...]`.

With no kinds, every plug-in runs; `ws` is the WebSocket gateway (port 3112). Replicas are
safe for every kind: cron ticks, queue and stream messages go through shared durable
consumers, and the http/ws listeners share their port with SO_REUSEPORT.
"""

from __future__ import annotations

import sys

from engine import Worker
from engine.triggers import all_kinds, host


def build(kinds: list[str] | None = None) -> Worker:
    kinds = kinds or all_kinds()
    worker = Worker(
        "triggers-" + "-".join(kinds), description="trigger plug-ins: " + ", ".join(kinds)
    )
    host(worker, kinds)
    return worker


def main(argv: list[str]) -> None:
    build(argv).run()


if __name__ == "__main__":
    main(sys.argv[1:])
