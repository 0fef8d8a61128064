"""The `agentmemory` Typer app and what every command shares: consoles, instance options."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from workers.cli.target import Target

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


def target_of(
    ctx: typer.Context, data_dir: str | None, port: int | None, instance: int | None
) -> Target:
    base: dict[str, Any] = ctx.obj or {}
    return Target.resolve(
        data_dir or base.get("data_dir"),
        port or base.get("port"),
        instance if instance is not None else base.get("instance"),
    )


def fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)
