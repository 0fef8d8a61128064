"""`python -m ops.cluster` (`make cluster`): three NATS nodes (JetStream, routes, R3) and the
product on three simulated hosts, in the foreground until Ctrl-C.

    python -m ops.cluster [--data-dir D] [--port 3111] [--fresh]

Host k serves REST on port+100k (3111, 3211, 3311 by default) and runs memory, search and
lifecycle workers; every bucket and stream has three replicas. Ctrl-C stops the hosts (each
drains its workers), then the nodes. Data stays under the data dir for the next start.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import threading
from pathlib import Path

from engine.settings import engine_settings
from ops.cluster.cluster import HOSTS, Cluster, block_is_free


def default_root() -> Path:
    xdg = engine_settings().data_home
    return (xdg or Path.home() / ".local" / "share") / "agentmemory-cluster"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ops.cluster", description=__doc__)
    ap.add_argument("--data-dir", type=Path, default=default_root())
    ap.add_argument("--port", type=int, default=3111, help="anchor of host 0's port block")
    ap.add_argument("--fresh", action="store_true", help="remove the data dir first")
    args = ap.parse_args(argv)
    if not block_is_free(args.port, HOSTS):
        print(
            f"error: a port of the blocks at {args.port}, {args.port + 100}, {args.port + 200} "
            f"(+0..+6 each) is in use: stop what holds it (`make run`?) or pass --port",
            file=sys.stderr,
        )
        return 1
    if args.fresh:
        shutil.rmtree(args.data_dir, ignore_errors=True)
    cluster = Cluster(args.data_dir, anchor=args.port)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster.start()
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(cluster.describe(), file=sys.stderr)
    print("cluster ready (Ctrl-C stops it)", file=sys.stderr, flush=True)
    try:
        while not stop.wait(1.0):
            for h in cluster.hosts:
                if not h.running():
                    print(f"{h.name}'s engine exited; stopping the cluster", file=sys.stderr)
                    stop.set()
    finally:
        print("stopping hosts, then NATS nodes", file=sys.stderr)
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
