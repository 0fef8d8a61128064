"""No two files of the product (engine/, functions/, workers/, triggers/) or of ops/ import
each other, directly or around a loop: the file-level import graph, computed from the
source, has no cycle. Type-only (`if TYPE_CHECKING:`) and function-local imports count: a
cycle hidden behind them is still two files a reader must understand together, and one
refactoring away from an import error. tests/layout/test_imports.py proves each module
imports alone; this proves the order never mattered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.layout.source_imports import ROOT, cycles, file_graph, imported_files

pytestmark = pytest.mark.unit

FOLDERS = ("engine", "functions", "workers", "triggers", "ops")


def _show(loop: list[Path]) -> str:
    return " -> ".join(str(p.relative_to(ROOT)) for p in loop)


@pytest.fixture(scope="module")
def graph() -> dict[Path, set[Path]]:
    return file_graph(FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_file_is_part_of_an_import_cycle(graph: dict[Path, set[Path]], folder: str) -> None:
    """Each loop is reported under every folder it passes through, as its path of files."""
    assert len(graph) > 300  # the walk found the tree
    loops = [_show(loop) for loop in cycles(graph) if any(ROOT / folder in p.parents for p in loop)]
    assert loops == [], (
        f"import cycles through {folder}/ ({len(loops)}; type-only and function-local "
        "imports count; untie each by moving what both files need into one of them or a "
        "module below both):\n  " + "\n  ".join(loops)
    )


def test_the_check_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The graph is computed, not assumed: a submodule imported by name, a package (its
    `__init__`), an import inside a function and a type-only one are all edges, and a loop
    closed through them is reported with its path."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "from ops.cluster import hosts\n"
        "import ops.bench\n"
        "if TYPE_CHECKING:\n"
        "    from engine import Client\n"
        "def f():\n"
        "    from ops.cluster.cluster import Cluster\n"
    )
    found = {str(p.relative_to(ROOT)) for p in imported_files(probe)}
    assert found == {
        "ops/cluster/hosts.py",
        "ops/bench/__init__.py",
        "engine/__init__.py",
        "ops/cluster/cluster.py",
    }
    graph = file_graph(FOLDERS)
    graph[probe] = imported_files(probe)
    hosts = ROOT / "ops" / "cluster" / "hosts.py"
    graph[hosts] = graph[hosts] | {probe}
    loops = cycles(graph)
    assert [probe, hosts, probe] in loops or [hosts, probe, hosts] in loops, loops
