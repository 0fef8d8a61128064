"""`agentmemory init`, `upgrade` and `remove`: setting up, bringing an install up to date
(the data dir's format, every connected agent's config), and taking it away again."""

from __future__ import annotations

import shutil
from importlib.resources import files
from pathlib import Path
from typing import Annotated

import typer

from engine.settings import worker_identity
from workers import ENGINE_CONFIG
from workers.cli import connect, datadir, supervisor
from workers.cli.app import DataDir, InstanceOpt, Port, UrlOpt, app, fail, out, target_of
from workers.cli.target import Target, register, registry_dir, secret_path


def settings_file() -> Path:
    return Path.home() / ".agentmemory" / ".env"


@app.command()
def init(
    ctx: typer.Context,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Create ~/.agentmemory/.env (commented settings), the secret and the data dir."""
    from triggers.http.secret import load_secret

    target = target_of(ctx, data_dir, port, instance, local=True)
    env = settings_file()
    env.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    template = files("workers.cli").joinpath("env.template").read_text()
    try:
        with open(env, "x") as f:  # never over a file the user wrote
            f.write(template)
        out.print(f"[green]wrote[/green] {env} (every setting commented out)")
    except FileExistsError:
        out.print(f"kept {env}: it exists (init never writes over it)")
    had_secret = secret_path().exists()
    load_secret()
    out.print(f"{'kept' if had_secret else '[green]generated[/green]'} {secret_path()}")
    target.instance.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    datadir.migrate(target.instance.data_dir)
    out.print(f"data dir {target.instance.data_dir}")
    out.print(f"next: {target.hint('start --detach', local=True)}")
    out.print(f"then: {target.hint('connect claude-code --with-hooks')}")


def _refresh_agents(target: Target, home: Path) -> int:
    """Re-wire every agent whose config holds agentmemory, so its commands point at this
    install (after a reinstall the interpreter and the scripts may have moved), in the form
    it has: an entry by URL stays one, with this server's URL and secret."""
    env = target.selection_env()
    changed = 0
    for a in connect.AGENTS:
        w = connect.wiring(a.name, home)
        if not w.connected:
            continue
        by_url = connect.McpUrl.of(target.url, target.secret) if w.mcp_url else None
        plan = connect.wire(
            a.name,
            home,
            bool(w.hook_commands),
            target.url if env else "",
            env,
            mcp_url=by_url if by_url and by_url.secret else None,
        )
        for ch in plan.changes:
            if ch.changed:
                ch.write()
                changed += 1
                out.print(f"[green]updated[/green] {ch.path} ({a.display})")
    return changed


@app.command()
def upgrade(
    ctx: typer.Context,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
    url: UrlOpt = None,
) -> None:
    """Bring the data dir to this version's format (stopping and restarting a running
    instance around it) and refresh every connected agent's config."""
    target = target_of(ctx, data_dir, port, instance, url)
    data = target.instance.data_dir
    try:
        datadir.check(data)
    except datadir.TooNew as exc:
        raise fail(str(exc)) from None
    running = not target.remote and target.instance.running_pid() is not None
    steps: list[int] = []
    if not target.remote and datadir.read_format(data) < datadir.FORMAT and data.exists():
        if running:
            code, text = supervisor.stop(target)
            if code != 0:
                raise fail(f"could not stop the instance to upgrade its data: {text}")
        steps = datadir.migrate(data)
        if running:
            pid = supervisor.start_detached(target, worker_identity().config or ENGINE_CONFIG)
            register(target.instance)
            out.print(f"restarted (pid {pid})")
    out.print(
        f"data dir {data}: format {datadir.read_format(data) if data.exists() else '-'}"
        + (f" (migrated through {', '.join(map(str, steps))})" if steps else " (current)")
    )
    changed = _refresh_agents(target, Path.home())
    out.print(f"{changed} agent config file(s) refreshed" if changed else "agent configs current")


@app.command()
def remove(
    ctx: typer.Context,
    purge: Annotated[
        bool,
        typer.Option("--purge", help="Also delete the stored memory, secret and settings."),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before --purge.")] = False,
    data_dir: DataDir = None,
    port: Port = None,
    instance: InstanceOpt = None,
) -> None:
    """Stop the instance and unwire every agent; the data stays unless --purge."""
    target = target_of(ctx, data_dir, port, instance, local=True)
    if target.instance.running_pid() is not None:
        code, text = supervisor.stop(target)
        out.print(text)
        if code != 0:
            raise fail("the instance did not stop; nothing else was changed")
    home = Path.home()
    for a in connect.AGENTS:
        for ch in connect.unplan(a.name, home).changes:
            ch.write()
            out.print(f"[green]unwired[/green] {a.display}: {ch.path}")
    (home / ".agentmemory" / "mcp-tools.json").unlink(missing_ok=True)
    (registry_dir() / f"{target.instance.number}.json").unlink(missing_ok=True)
    out.print(
        "if you installed the plugin: claude plugin uninstall agentmemory@agentmemory "
        "(codex: codex plugin remove agentmemory@agentmemory)"
    )
    data = target.instance.data_dir
    if not purge:
        out.print(f"kept the data in {data} and the settings in {home / '.agentmemory'}")
        return
    if not yes and not typer.confirm(f"Delete {data} and {home / '.agentmemory'}?"):
        raise typer.Exit(1)
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(home / ".agentmemory", ignore_errors=True)
    out.print(f"deleted {data} and {home / '.agentmemory'}")


@app.command()
def plugin() -> None:
    """Where this install's Claude Code / Codex plugin (and its marketplace) is, and the
    commands that install it."""
    from workers.hooks import HOOKS_DIR

    root = str(HOOKS_DIR)
    out.print(root, highlight=False)
    out.print(f"claude plugin marketplace add {root}", highlight=False)
    out.print("claude plugin install agentmemory@agentmemory", highlight=False)
    out.print(f"codex plugin marketplace add {root}", highlight=False)
    out.print("codex plugin add agentmemory@agentmemory", highlight=False)
