"""The `agentmemory` command line: starting and stopping the service and wiring agents live here, the
commands over stored memory in `memory_cmds`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.panel import Panel

from engine.paths import load_settings
from workers import ENGINE_CONFIG
from workers.cli import connect as connect_mod
from workers.cli import datadir, supervisor
from workers.cli.app import (
    DataDir,
    InstanceOpt,
    Port,
    UrlOpt,
    app,
    err,
    fail,
    out,
    target_of,
)
from workers.cli.target import Target, register


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    load_settings()
    ctx.obj = {"data_dir": data_dir, "port": port, "instance": instance, "url": url}
    if ctx.invoked_subcommand is None:
        ctx.invoke(start, ctx=ctx)


def _viewer_url(port: int, ttl: float) -> str:
    """The viewer's URL with a one-time login token (workers/viewer/tokens.py), made with
    the REST secret this user may read; the plain URL when the login is off."""
    from engine.settings import load
    from triggers.http.secret import load_secret
    from workers.viewer.settings import ViewerSettings
    from workers.viewer.tokens import login_url

    if load(ViewerSettings).auth == "none":
        return f"http://127.0.0.1:{port}/"
    return login_url(port, load_secret(), ttl)


def _ready_panel(target: Target, pid: int | None = None) -> Panel:
    from workers.viewer.tokens import START_TTL

    p = target.instance.ports
    lines = [
        f"REST     http://127.0.0.1:{p.rest}/agentmemory",
        f"streams  ws://127.0.0.1:{p.streams}",
        f"viewer   {_viewer_url(p.viewer, START_TTL)}  (one-time link)",
        f"console  http://127.0.0.1:{p.console}",
        f"data     {target.instance.data_dir}",
    ]
    if pid:
        lines.append(f"pid      {pid}  (stop with: {target.hint('stop', local=True)})")
    lines.append(f"next     {target.hint('connect claude-code --with-hooks')}")
    return Panel.fit(escape("\n".join(lines)), title="agentmemory is ready", border_style="green")


@app.command()
def start(
    ctx: typer.Context,
    detach: Annotated[bool, typer.Option("--detach", "-d", help="Run in the background.")] = False,
    config: Annotated[Path, typer.Option(help="Engine config.")] = ENGINE_CONFIG,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Start the engine and the memory service (foreground unless --detach)."""
    target = target_of(ctx, data_dir, port, instance, local=True)
    running = target.instance.running_pid()
    if not running:
        try:
            datadir.migrate(target.instance.data_dir)  # stamps a new one; refuses a newer one
        except datadir.TooNew as exc:
            raise fail(str(exc)) from None
    if running:
        supervisor.drain_spool(target)  # what `doctor` suggests for a backlog
        out.print(_ready_panel(target, running))
        out.print("[yellow]already running[/yellow]")
        return
    if detach:
        with out.status("starting agentmemory…"):
            try:
                pid = supervisor.start_detached(target, config)
            except supervisor.StartFailed as exc:
                raise fail(f"the engine did not start:\n{exc}") from None
        register(target.instance)
        if supervisor.wait_serving(target):
            supervisor.drain_spool(target)
        else:
            err.print(f"[yellow]REST is not answering yet at {target.url}[/yellow]")
        out.print(_ready_panel(target, pid))
        return

    def ready() -> None:
        register(target.instance)
        if supervisor.wait_serving(target):
            supervisor.drain_spool(target)
        out.print(_ready_panel(target))

    raise typer.Exit(supervisor.run_foreground(target, config, ready))


@app.command()
def stop(
    ctx: typer.Context, data_dir: DataDir = None, port: Port = None, instance: InstanceOpt = None
) -> None:
    """Stop a running instance (triggers first, NATS last)."""
    code, text = supervisor.stop(target_of(ctx, data_dir, port, instance, local=True))
    (out if code == 0 else err).print(text)
    raise typer.Exit(code)


@app.command()
def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Engine, workers, NATS, ports, data dir, counts, embedding mode."""
    from workers.cli import status as status_mod

    target = target_of(ctx, data_dir, port, instance, url)
    st = status_mod.collect(target)
    if as_json:
        sys.stdout.write(json.dumps(st) + "\n")
    else:
        status_mod.render(st, target, out)
    raise typer.Exit(0 if st["running"] else 1)


@app.command()
def doctor(
    ctx: typer.Context,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            help="Also require this agent to be connected (repeatable). Without it, only "
            "the agents whose config holds agentmemory are checked.",
        ),
    ] = None,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Check ports, data dir, secret, NATS, REST and connected agents; print each fix.

    Exits 0 when every check passes, 1 when one fails."""
    from workers.cli import doctor as doc

    names = [a.name for a in connect_mod.AGENTS]
    unknown = [a for a in agent or [] if a not in names]
    if unknown:
        choices = ", ".join(names)
        raise fail(f"unknown agent {unknown[0]!r} for --agent; choose one of {choices}", 2)
    checks = doc.run(target_of(ctx, data_dir, port, instance, url), Path.home(), agent)
    for c in checks:
        mark = "[green]ok[/green]  " if c.ok else "[red]FAIL[/red]"
        out.print(f"{mark} {escape(c.name)}: {escape(c.detail)}", highlight=False)
        if c.fix:
            label = "next" if c.ok else "fix"
            out.print(f"      {label}: [bold]{escape(c.fix)}[/bold]", highlight=False)
    failed = sum(not c.ok for c in checks)
    if failed:
        out.print(f"[red]{failed} check(s) failed[/red]")
    raise typer.Exit(1 if failed else 0)


@app.command()
def connect(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help=f"One of: {', '.join(connect_mod.NAMES)}")],
    with_hooks: Annotated[
        bool,
        typer.Option(
            "--with-hooks", help="Also install capture hooks (where the agent runs them)."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the change, write nothing.")
    ] = False,
    remove: Annotated[
        bool, typer.Option("--remove", help="Take agentmemory out of the agent's config.")
    ] = False,
    guidelines: Annotated[
        bool,
        typer.Option(
            "--guidelines/--no-guidelines",
            help="For an agent without hooks, a short memory guideline in its rules file.",
        ),
    ] = True,
    transport: Annotated[
        str,
        typer.Option(
            "--transport",
            help="stdio: the agent starts `agentmemory mcp` (starts the service when it is "
            "down; saves land in the project the agent works in). http: the agent connects to "
            "this server's /agentmemory/mcp URL with the bearer secret, where its config takes "
            "a URL (docs/AGENTS.md).",
        ),
    ] = "stdio",
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Wire an agent to agentmemory (merges into its config, keeps other entries)."""
    if transport not in ("stdio", "http"):
        raise fail(f"unknown transport {transport!r} for --transport; choose stdio or http", 2)
    target = target_of(ctx, data_dir, port, instance, url)
    env = target.selection_env()
    mcp_url = _mcp_url(target) if transport == "http" and not remove else None
    if agent == "mcp":
        out.print(connect_mod.generic_block(env, mcp_url), markup=False)
        return
    # Hooks read nothing but their command line and AGENTMEMORY_URL: a non-default server is
    # named there; the MCP server gets the variables that select the instance.
    hook_url = target.url if env else ""
    try:
        if remove:
            result = connect_mod.unplan(agent, Path.home())
        else:
            result = connect_mod.wire(
                agent,
                Path.home(),
                with_hooks,
                hook_url,
                env,
                guidelines=guidelines,
                mcp_url=mcp_url,
            )
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    for ch in result.changes:
        if not ch.changed:
            out.print(f"unchanged {ch.path}")
        elif dry_run:
            out.print(ch.diff(), markup=False, highlight=False, end="")
        else:
            ch.write()
            out.print(f"[green]{'removed' if ch.remove else 'updated'}[/green] {ch.path}")
    if remove and not result.changes:
        out.print(f"{agent}: nothing of agentmemory's to remove")
    for note in result.notes:
        out.print(note, highlight=False)
    if result.hooks and with_hooks and not dry_run and not remove:
        out.print("hooks installed; start a new agent session to use them")


def _mcp_url(target: Target) -> connect_mod.McpUrl:
    """The server's MCP URL and the secret it checks (made now for a local instance that
    has none yet: the service reads the same file when it starts)."""
    from triggers.http.secret import load_secret

    secret = target.secret or ("" if target.remote else load_secret())
    if not secret:
        raise fail(
            f"no secret known for {target.url}: set AGENTMEMORY_SECRET to that server's secret",
            2,
        )
    return connect_mod.McpUrl.of(target.url, secret)


@app.command()
def mcp(
    ctx: typer.Context,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Serve MCP on stdio (for an agent's mcpServers entry). Starts the service when none
    runs on the instance (AGENTMEMORY_MCP_AUTOSTART=false: report it instead)."""
    from engine import settings
    from engine.paths import current_layout
    from workers.mcp.server import main as serve

    base: dict[str, Any] = ctx.obj or {}
    chosen = [data_dir, port, instance, url, *base.values()]
    if any(v is not None for v in chosen):
        # The server resolves its instance from the environment, as an agent's config sets it.
        chosen_env = target_of(ctx, data_dir, port, instance, url).selection_env()
        lay = current_layout()
        chosen_names = [lay.env(n) for n in ("INSTANCE", "DATA_DIR", "PORT")]
        settings.update(chosen_env, remove=[*chosen_names, "AGENTMEMORY_URL"])
    serve()


@app.command()
def viewer(
    ctx: typer.Context,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Print the link only; open no browser.")
    ] = False,
) -> None:
    """Open the memory viewer in a browser, signed in by a one-time link (10 minutes)."""
    import webbrowser

    from workers.viewer.tokens import LOGIN_TTL

    ports = target_of(ctx, data_dir, port, instance, local=True).instance.ports
    url = _viewer_url(ports.viewer, LOGIN_TTL)
    out.print(f"viewer: {url}", soft_wrap=True)
    if not no_open:
        webbrowser.open(url)


@app.command()
def console(
    ctx: typer.Context, data_dir: DataDir = None, port: Port = None, instance: InstanceOpt = None
) -> None:
    """Open the engine console in a browser."""
    import webbrowser

    url = f"http://127.0.0.1:{target_of(ctx, data_dir, port, instance, local=True).instance.ports.console}"
    out.print(f"console: {url}")
    webbrowser.open(url)


def main() -> None:
    # Imported here so that `--help` lists start, stop and status first.
    from workers.cli import memory_cmds, setup_cmds

    del memory_cmds, setup_cmds  # registered on `app` by importing them
    app()


if __name__ == "__main__":
    main()
