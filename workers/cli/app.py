"""The `agentmemory` Typer app and what every command shares: consoles, instance options."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from workers.cli.target import Target

app = typer.Typer(
    name="agentmemory",
    help="Persistent memory for AI coding agents, on NATS.",
    add_completion=False,
    no_args_is_help=False,
)

# Piped or redirected, a line is read by a program or copied from a file: rich's 80-column
# default would break diffs, paths and commands mid-line. A terminal keeps its own width.
PIPED_WIDTH = 10_000


def _console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console.width = PIPED_WIDTH
    return console


out = _console()
err = _console(stderr=True)

DataDir = Annotated[str | None, typer.Option("--data-dir", help="Data directory of the instance.")]
Port = Annotated[int | None, typer.Option("--port", help="Anchor of the port block (REST port).")]
InstanceOpt = Annotated[
    int | None, typer.Option("--instance", help="Instance number K (ports +100×K).")
]
UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="Talk to the server at this URL over REST (default: AGENTMEMORY_URL, "
        "else the instance's REST port). The secret: AGENTMEMORY_SECRET or ~/.agentmemory/secret.",
    ),
]


def target_of(
    ctx: typer.Context,
    data_dir: str | None,
    port: int | None,
    instance: int | None,
    url: str | None = None,
    *,
    local: bool = False,
) -> Target:
    base: dict[str, Any] = ctx.obj or {}
    return Target.resolve(
        data_dir or base.get("data_dir"),
        port or base.get("port"),
        instance if instance is not None else base.get("instance"),
        url or base.get("url"),
        local=local,
    )


def fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    return typer.Exit(code)
