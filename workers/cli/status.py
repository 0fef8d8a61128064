"""`agentmemory status`: what runs, where, and what is stored, as text or as JSON."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from workers.cli import supervisor
from workers.cli.target import Target

_NOUNS = {
    "sessions": ("session", "sessions"),
    "observations": ("observation", "observations"),
    "memories": ("memory", "memories"),
    "summaries": ("summary", "summaries"),
}


def collect(target: Target) -> dict[str, Any]:
    # A server named by --url may live on another machine: the local engine is not it.
    eng: dict[str, Any] = {"running": False}
    if not target.remote:
        eng = supervisor.engine_status(target)
    with target.client(timeout=3) as rest:
        serving = rest.alive()
    p = target.instance.ports
    workers = [
        {k: w.get(k) for k in ("name", "replica", "state", "pid", "restarts")}
        for w in eng.get("workers", [])
        if isinstance(w, dict)
    ]
    return {
        "running": bool(eng.get("running")) or (target.remote and serving),
        "serving": serving,
        "remote": target.remote,
        "engine": {
            "pid": eng.get("pid"),
            "instance": target.instance.number,
            "started_at": eng.get("started_at"),
        },
        "workers": workers,
        "nats": {"url": eng.get("nats_url"), "embedded": eng.get("embedded_nats")},
        "ports": {
            "rest": p.rest,
            "streams": p.streams,
            "viewer": p.viewer,
            "console": p.console,
            "nats": p.nats,
            "nats_monitor": p.nats_monitor,
        },
        "data_dir": str(target.instance.data_dir),
        "url": target.url,
        "counts": supervisor.counts(target) if serving else None,
        "team": supervisor.team(target) if serving else None,
        "embedding_mode": supervisor.embedding_mode(),
    }


def stored(counts: dict[str, int] | None) -> str:
    if counts is None:
        return "unknown (REST is not answering)"
    parts = []
    for key, (one, many) in _NOUNS.items():
        if key in counts:
            n = counts[key]
            parts.append(f"{n:,} {one if n == 1 else many}")
    return ", ".join(parts) or "nothing"


def teamed(team: dict[str, Any] | None) -> str:
    """One line for the team link: each peer's state, from what flowed (docs/TEAM.md)."""
    if team is None:
        return "unknown (REST is not answering)"
    peers = [p for p in team.get("peers", []) if isinstance(p, dict)]
    who = f"{team.get('self', '?')} in team {team.get('team', '?')}"
    if not peers:
        return f"{who}: no peers linked (docs/TEAM.md)"
    parts = []
    for p in peers:
        trip = p.get("roundTripMs")
        said = f"{p.get('name', '?')} {p.get('status', '?')}"
        if isinstance(trip, int | float):
            said += f" (round trip {trip:.0f} ms)"
        elif p.get("error"):
            said += f" ({p['error']})"
        parts.append(said)
    return f"{who}: " + ", ".join(parts)


def _since(started_at: Any) -> str:
    if not isinstance(started_at, int | float):
        return ""
    up = max(0, int(time.time() - started_at))
    hours, rest = divmod(up, 3600)
    clock = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started_at))
    return f", since {clock} (up {hours}h{rest // 60:02d}m{rest % 60:02d}s)"


def render(st: dict[str, Any], target: Target, console: Console) -> None:
    def line(label: str, value: str) -> None:
        console.print(f"{label:<11} {escape(value)}", highlight=False)

    if not st["running"] and target.remote:
        console.print(
            f"[yellow]nothing answers at {escape(st['url'])}[/yellow]; "
            "check the URL and that agentmemory runs there",
            highlight=False,
        )
        return
    if not st["running"]:
        console.print(
            f"[yellow]agentmemory is not running[/yellow] (instance {target.instance.number}, "
            f"data dir {escape(st['data_dir'])})",
            highlight=False,
        )
        console.print(f"start it with: {escape(target.hint('start --detach', local=True))}")
        return
    if st["remote"]:
        console.print(f"agentmemory answers at {escape(st['url'])}", highlight=False)
        line("stored", stored(st["counts"]))
        line("team", teamed(st["team"]))
        return
    eng, p = st["engine"], st["ports"]
    console.print(
        f"[green]agentmemory is running[/green]: instance {eng['instance']}, "
        f"pid {eng['pid']}{_since(eng['started_at'])}",
        highlight=False,
    )
    rest = f"{st['url']}/agentmemory"
    line("REST", rest if st["serving"] else f"{rest} (not answering yet)")
    line("streams", f"ws://127.0.0.1:{p['streams']}")
    line("viewer", f"http://127.0.0.1:{p['viewer']}")
    line("console", f"http://127.0.0.1:{p['console']}")
    embedded = " (embedded)" if st["nats"]["embedded"] else ""
    line("NATS", f"{st['nats']['url']}{embedded}, monitor :{p['nats_monitor']}")
    line("data", st["data_dir"])
    line("stored", stored(st["counts"]))
    line("team", teamed(st["team"]))
    line("embeddings", st["embedding_mode"])
    table = Table("worker", "state", "pid", "restarts", box=None, pad_edge=False)
    for w in st["workers"]:
        table.add_row(
            f"{w['name']}.{w['replica']}", str(w["state"]), str(w["pid"]), str(w["restarts"])
        )
    console.print(table)
