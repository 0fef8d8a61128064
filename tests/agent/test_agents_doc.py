"""docs/AGENTS.md against the code it describes: every connect target is a row of its
table (and every row a target), every command of the CLI has a row, and the two install
routes a user meets first (pipx/uv, the plugin marketplace) are there as commands."""

from __future__ import annotations

import re

import pytest

from tests.fixtures import ROOT
from workers.cli import memory_cmds, setup_cmds  # noqa: F401  (they register their commands on `app`)
from workers.cli.agents import NAMES
from workers.cli.service_cmds import app

pytestmark = pytest.mark.unit

DOC = (ROOT / "docs" / "AGENTS.md").read_text()


def _rows(header: str) -> list[str]:
    """The first cells of the markdown table whose header row starts with `header`."""
    lines = DOC.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header}"))
    cells = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells.append(line.split("|")[1].strip())
    return cells


def test_every_connect_target_is_a_row_and_every_row_a_target() -> None:
    rows = _rows("agent (`connect …`)")
    named = [m.group(1) for r in rows if (m := re.search(r"\(`([a-z-]+)`\)", r))]
    assert len(named) == len(rows), rows  # each row names its target
    assert sorted(named) == sorted(n for n in NAMES if n != "mcp")
    assert "`connect <agent>" in DOC and "`mcp`" in DOC  # the generic block


def test_every_cli_command_has_a_row() -> None:
    commands = {
        c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands
    }
    documented = " ".join(_rows("command"))
    missing = sorted(c for c in commands if f"`{c}" not in documented and f"{c}`" not in documented)
    assert not missing, f"commands without a row in docs/AGENTS.md: {missing}"


def test_the_install_routes_are_there_as_commands() -> None:
    for said in (
        "pipx install agentmemory-nats",
        "uv tool install agentmemory-nats",
        "claude plugin marketplace add",
        "codex plugin marketplace add",
    ):
        assert said in DOC, said
