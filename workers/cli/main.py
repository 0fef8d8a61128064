"""The `agentmemory` command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.progress import Progress
from rich.table import Table

from engine._paths import load_settings
from workers.cli import connect as connect_mod
from workers.cli import lifecycle
from workers.cli.target import DEFAULT_CONFIG, ServiceError, Target

app = typer.Typer(
    name="agentmemory",
    help="Persistent memory for AI coding agents, on NATS.",
    add_completion=False,
    no_args_is_help=False,
)
out = Console()
err = Console(stderr=True)

DataDir = Annotated[str | None, typer.Option("--data-dir", help="Data directory of the instance.")]
Port = Annotated[int | None, typer.Option("--port", help="Anchor of the port block (REST port).")]
InstanceOpt = Annotated[
    int | None, typer.Option("--instance", help="Instance number K (ports +100×K).")
]


def _target(
    ctx: typer.Context, data_dir: str | None, port: int | None, instance: int | None
) -> Target:
    base: dict[str, Any] = ctx.obj or {}
    return Target.resolve(
        data_dir or base.get("data_dir"),
        port or base.get("port"),
        instance if instance is not None else base.get("instance"),
    )


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context, data_dir: DataDir = None, port: Port = None, instance: InstanceOpt = None
) -> None:
    load_settings()
    ctx.obj = {"data_dir": data_dir, "port": port, "instance": instance}
    if ctx.invoked_subcommand is None:
        ctx.invoke(start, ctx=ctx)


def _ready_panel(target: Target, pid: int | None = None) -> Panel:
    p = target.instance.ports
    lines = [
        f"REST     http://127.0.0.1:{p.rest}/agentmemory",
        f"streams  ws://127.0.0.1:{p.streams}",
        f"viewer   http://127.0.0.1:{p.viewer}",
        f"console  http://127.0.0.1:{p.console}",
        f"data     {target.instance.data_dir}",
    ]
    if pid:
        lines.append(f"pid      {pid}  (stop with: agentmemory stop)")
    lines.append("next     agentmemory connect claude-code --with-hooks")
    return Panel("\n".join(lines), title="agentmemory is ready", border_style="green")


@app.command()
def start(
    ctx: typer.Context,
    detach: Annotated[bool, typer.Option("--detach", "-d", help="Run in the background.")] = False,
    config: Annotated[Path, typer.Option(help="Engine config.")] = DEFAULT_CONFIG,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Start the engine and the memory service (foreground unless --detach)."""
    target = _target(ctx, data_dir, port, instance)
    running = target.instance.running_pid()
    if running:
        out.print(_ready_panel(target, running))
        out.print("[yellow]already running[/yellow]")
        return
    if detach:
        with out.status("starting agentmemory…"):
            try:
                pid = lifecycle.start_detached(target, config)
            except lifecycle.StartFailed as exc:
                raise _fail(f"the engine did not start:\n{exc}") from None
        if lifecycle.wait_serving(target):
            lifecycle.drain_spool(target)
        else:
            err.print(f"[yellow]REST is not answering yet at {target.url}[/yellow]")
        out.print(_ready_panel(target, pid))
        return

    def ready() -> None:
        if lifecycle.wait_serving(target):
            lifecycle.drain_spool(target)
        out.print(_ready_panel(target))

    raise typer.Exit(lifecycle.run_foreground(target, config, ready))


@app.command()
def stop(
    ctx: typer.Context, data_dir: DataDir = None, port: Port = None, instance: InstanceOpt = None
) -> None:
    """Stop a running instance (triggers first, NATS last)."""
    code, text = lifecycle.stop(_target(ctx, data_dir, port, instance))
    (out if code == 0 else err).print(text)
    raise typer.Exit(code)


def _status(target: Target) -> dict[str, Any]:
    eng = lifecycle.engine_status(target)
    p = target.instance.ports
    workers = [
        {k: w.get(k) for k in ("name", "replica", "state", "pid", "restarts")}
        for w in eng.get("workers", [])
        if isinstance(w, dict)
    ]
    return {
        "running": bool(eng.get("running")),
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
        "counts": lifecycle.counts(target) if eng.get("running") else None,
        "embedding_mode": lifecycle.embedding_mode(),
    }


@app.command()
def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Engine, workers, NATS, ports, data dir, counts, embedding mode."""
    st = _status(_target(ctx, data_dir, port, instance))
    if as_json:
        sys.stdout.write(json.dumps(st) + "\n")
        raise typer.Exit(0 if st["running"] else 1)
    if not st["running"]:
        out.print(
            f"[yellow]not running[/yellow] (data dir {st['data_dir']}); start with: agentmemory start --detach"
        )
        raise typer.Exit(1)
    table = Table(
        "worker", "state", "pid", "restarts", title=f"agentmemory (pid {st['engine']['pid']})"
    )
    for w in st["workers"]:
        table.add_row(
            f"{w['name']}.{w['replica']}", str(w["state"]), str(w["pid"]), str(w["restarts"])
        )
    out.print(table)
    out.print(f"NATS {st['nats']['url']}  REST {st['url']}  data {st['data_dir']}")
    out.print(f"counts {st['counts']}  embeddings {st['embedding_mode']}")


@app.command()
def doctor(
    ctx: typer.Context, data_dir: DataDir = None, port: Port = None, instance: InstanceOpt = None
) -> None:
    """Check ports, data dir, secret, NATS, REST and hooks; print the fix for each problem."""
    from workers.cli import doctor as doc

    checks = doc.run(_target(ctx, data_dir, port, instance), Path.home())
    for c in checks:
        mark = "[green]ok[/green]  " if c.ok else "[red]FAIL[/red]"
        out.print(f"{mark} {c.name}: {c.detail}")
        if not c.ok and c.fix:
            out.print(f"      fix: [bold]{c.fix}[/bold]")
    raise typer.Exit(0 if all(c.ok for c in checks) else 1)


@app.command()
def connect(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help=f"One of: {', '.join(connect_mod.AGENTS)}")],
    with_hooks: Annotated[
        bool, typer.Option("--with-hooks", help="Also install capture hooks.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the change, write nothing.")
    ] = False,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Wire an agent to agentmemory (merges into its config, keeps other entries)."""
    if agent == "mcp":
        out.print(connect_mod.generic_block(), markup=False)
        return
    where: dict[str, str] = {}
    base: dict[str, Any] = ctx.obj or {}
    if any(v is not None for v in (data_dir, port, instance, *base.values())):
        # A non-default instance: the hooks get its URL; the MCP server its data dir and
        # port as an instance-0 anchor, which resolves to exactly these paths and ports.
        target = _target(ctx, data_dir, port, instance)
        where = {
            "AGENTMEMORY_URL": target.url,
            "AGENTMEMORY_DATA_DIR": str(target.instance.data_dir),
            "AGENTMEMORY_PORT": str(target.instance.ports.rest),
        }
    try:
        changes = connect_mod.plan(agent, Path.home(), with_hooks, where)
    except ValueError as exc:
        raise _fail(str(exc), 2) from None
    for ch in changes:
        if not ch.changed:
            out.print(f"unchanged {ch.path}")
        elif dry_run:
            out.print(ch.diff(), markup=False, highlight=False)
        else:
            ch.write()
            out.print(f"[green]updated[/green] {ch.path}")
    if with_hooks and not dry_run:
        out.print("hooks installed; start a new agent session to use them")


@app.command()
def mcp() -> None:
    """Serve MCP on stdio (for an agent's mcpServers entry)."""
    from workers.mcp.server import main as serve

    serve()


@app.command()
def demo(
    ctx: typer.Context, data_dir: DataDir = None, port: Port = None, instance: InstanceOpt = None
) -> None:
    """Seed three coding sessions (JWT auth, an N+1 fix, rate limiting) and search them."""
    from workers.cli import demo as demo_mod

    target = _target(ctx, data_dir, port, instance)
    try:
        with target.client() as rest:
            n = demo_mod.seed(rest)
            out.print(
                f"seeded {len(demo_mod.SESSIONS)} sessions, {n} events (project {demo_mod.PROJECT})"
            )
            for q in demo_mod.QUERIES:
                data = rest.call(
                    "POST",
                    "/agentmemory/search",
                    {"query": q, "limit": 3, "project": demo_mod.PROJECT},
                )
                _print_hits(q, data)
    except ServiceError as exc:
        raise _fail(str(exc)) from None


def _hits(data: Any) -> list[dict[str, Any]]:
    items = data.get("results", data.get("items", [])) if isinstance(data, dict) else data
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _print_hits(query: str, data: Any) -> None:
    table = Table(
        "score", "session / kind", "title", title=f"search: {query}", title_justify="left"
    )
    for hit in _hits(data):
        rec = hit.get("observation") or hit.get("memory") or hit
        score = hit.get("score", "")
        table.add_row(
            f"{score:.3f}" if isinstance(score, float) else str(score),
            str(rec.get("sessionId") or rec.get("session_id") or hit.get("kind") or ""),
            str(rec.get("title") or rec.get("content") or rec.get("narrative") or "")[:90],
        )
    out.print(table)


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option(min=1, max=100)] = 10,
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Search observations and memories."""
    body: dict[str, Any] = {"query": query, "limit": limit}
    if project:
        body["project"] = project
    try:
        with _target(ctx, data_dir, port, instance).client() as rest:
            data = rest.call("POST", "/agentmemory/search", body)
    except ServiceError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        _print_hits(query, data)


@app.command()
def remember(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="What to remember.")],
    type: Annotated[
        str, typer.Option(help="fact, decision, pattern, preference, bug, workflow")
    ] = "fact",
    concept: Annotated[list[str] | None, typer.Option("--concept", help="Repeatable.")] = None,
    file: Annotated[list[str] | None, typer.Option("--file", help="Repeatable.")] = None,
    project: Annotated[str | None, typer.Option()] = None,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Save a memory on purpose."""
    body: dict[str, Any] = {
        "content": content,
        "type": type,
        "concepts": concept or [],
        "files": file or [],
    }
    if project:
        body["project"] = project
    try:
        with _target(ctx, data_dir, port, instance).client() as rest:
            data = rest.call("POST", "/agentmemory/remember", body)
    except ServiceError as exc:
        raise _fail(str(exc)) from None
    out.print_json(json.dumps(data))


@app.command()
def export(
    ctx: typer.Context,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File (default stdout).")
    ] = None,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Export everything as JSON."""
    try:
        with _target(ctx, data_dir, port, instance).client(timeout=120) as rest:
            data = rest.call("GET", "/agentmemory/export")
    except ServiceError as exc:
        raise _fail(str(exc)) from None
    text = json.dumps(data, indent=1)
    if output:
        output.write_text(text)
        err.print(f"exported to {output}")
    else:
        sys.stdout.write(text + "\n")


@app.command(name="import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="An export JSON file.")],
    strategy: Annotated[str, typer.Option(help="merge, skip or replace")] = "merge",
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Import an export document."""
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        raise _fail(f"{path} is not valid JSON: {exc}", 2) from None
    try:
        with _target(ctx, data_dir, port, instance).client(timeout=300) as rest:
            data = rest.call(
                "POST", "/agentmemory/import", {"exportData": doc, "strategy": strategy}
            )
    except ServiceError as exc:
        raise _fail(str(exc)) from None
    out.print_json(json.dumps(data))


@app.command(name="import-jsonl")
def import_jsonl(
    ctx: typer.Context,
    path: Annotated[
        Path | None, typer.Argument(help="File or folder (default ~/.claude/projects).")
    ] = None,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Import Claude Code transcripts; safe to run again (events keep their ids)."""
    from workers.cli import transcripts as tr
    from workers.hooks._hookcore import now_iso

    root = path or Path.home() / ".claude" / "projects"
    if not root.exists():
        raise _fail(f"{root} does not exist", 2)
    files = tr.find_transcripts(root)
    sessions = events = 0
    try:
        with _target(ctx, data_dir, port, instance).client() as rest, Progress(console=err) as bar:
            task = bar.add_task("importing transcripts", total=len(files))
            for f in files:
                for s in tr.parse(f):
                    project = tr.project_for(s.cwd)
                    base = {
                        "sessionId": s.session_id,
                        "project": project,
                        "cwd": s.cwd or str(root),
                    }
                    rest.call("POST", "/agentmemory/session/start", base)
                    for ev in s.events:
                        ev = {
                            **base,
                            **ev,
                            "timestamp": ev["timestamp"] or now_iso(),
                            "agentId": "claude-code",
                        }
                        rest.call("POST", "/agentmemory/observe", ev)
                        events += 1
                    rest.call("POST", "/agentmemory/session/end", {"sessionId": s.session_id})
                    sessions += 1
                bar.advance(task)
    except ServiceError as exc:
        raise _fail(str(exc)) from None
    out.print(f"imported {sessions} session(s), {events} event(s) from {len(files)} file(s)")


@app.command()
def console(
    ctx: typer.Context, data_dir: DataDir = None, port: Port = None, instance: InstanceOpt = None
) -> None:
    """Open the engine console in a browser."""
    import webbrowser

    url = f"http://127.0.0.1:{_target(ctx, data_dir, port, instance).instance.ports.console}"
    out.print(f"console: {url}")
    webbrowser.open(url)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
