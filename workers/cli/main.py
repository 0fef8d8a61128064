"""The `agentmemory` command line: the engine's lifecycle and agent wiring live here, the
commands over stored memory in `memory_cmds`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table

from engine.paths import load_settings
from workers.cli import connect as connect_mod
from workers.cli import lifecycle
from workers.cli.app import DataDir, InstanceOpt, Port, app, err, fail, out, target_of
from workers.cli.target import DEFAULT_CONFIG, Target


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
    target = target_of(ctx, data_dir, port, instance)
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
                raise fail(f"the engine did not start:\n{exc}") from None
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
    code, text = lifecycle.stop(target_of(ctx, data_dir, port, instance))
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
    st = _status(target_of(ctx, data_dir, port, instance))
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

    checks = doc.run(target_of(ctx, data_dir, port, instance), Path.home())
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
        target = target_of(ctx, data_dir, port, instance)
        where = {
            "AGENTMEMORY_URL": target.url,
            "AGENTMEMORY_DATA_DIR": str(target.instance.data_dir),
            "AGENTMEMORY_PORT": str(target.instance.ports.rest),
        }
    try:
        changes = connect_mod.plan(agent, Path.home(), with_hooks, where)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
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
def console(
    ctx: typer.Context, data_dir: DataDir = None, port: Port = None, instance: InstanceOpt = None
) -> None:
    """Open the engine console in a browser."""
    import webbrowser

    url = f"http://127.0.0.1:{target_of(ctx, data_dir, port, instance).instance.ports.console}"
    out.print(f"console: {url}")
    webbrowser.open(url)


def main() -> None:
    # Imported here so that `--help` lists the lifecycle commands first.
    from workers.cli import memory_cmds

    del memory_cmds  # registered on `app` by importing it
    app()


if __name__ == "__main__":
    main()
