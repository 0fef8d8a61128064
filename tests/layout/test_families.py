"""functions/ by concept: the folder-level import graph, computed from the source, has the
kernel at the bottom, no cycle, and no edge that functions/README.md's family map does not
list (so an upward import fails here, not in a reviewer's head)."""

from __future__ import annotations

import graphlib
import re
from pathlib import Path

import pytest

from tests.layout.source_imports import ROOT, imported_modules

pytestmark = pytest.mark.unit

FUNCTIONS = ROOT / "functions"


def folder_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None
    return parts[1] if (FUNCTIONS / parts[1]).is_dir() else None


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in FUNCTIONS.rglob("*.py"):
        rel = path.relative_to(FUNCTIONS)
        if len(rel.parts) == 1:
            continue
        src = rel.parts[0]
        graph.setdefault(src, set())
        for module in imported_modules(path, ["functions"]):
            dst = folder_of(module)
            if dst is not None and dst != src:
                graph[src].add(dst)
    return graph


def declared_map() -> dict[str, set[str]]:
    """The `| family | what it holds | imports |` table of functions/README.md."""
    rows: dict[str, set[str]] = {}
    for line in (FUNCTIONS / "README.md").read_text().splitlines():
        m = re.match(r"^\| (\w+) \| .* \| ([\w, -]+) \|$", line)
        if m and m.group(1) != "family":
            deps = {d.strip() for d in m.group(2).split(",")} - {"-", ""}
            rows[m.group(1)] = deps
    return rows


def test_every_module_belongs_to_a_folder() -> None:
    loose = [p.name for p in FUNCTIONS.glob("*.py") if p.name != "__init__.py"]
    assert loose == [], f"modules at the top of functions/ (put each in its family): {loose}"


def test_the_kernel_imports_no_family() -> None:
    assert import_graph()["kernel"] == set()


def test_the_folder_graph_has_no_cycle_and_the_kernel_is_at_the_bottom() -> None:
    graph = import_graph()
    order = list(graphlib.TopologicalSorter(graph).static_order())  # CycleError on a cycle
    assert order[0] == "kernel"
    for family, deps in graph.items():
        if family != "kernel":
            assert "kernel" in deps or not deps, family


def test_every_import_between_folders_is_on_the_family_map() -> None:
    graph, declared = import_graph(), declared_map()
    assert set(graph) == set(declared), (
        f"folders without a row in functions/README.md: {sorted(set(graph) - set(declared))}; "
        f"rows without a folder: {sorted(set(declared) - set(graph))}"
    )
    undeclared = {f: sorted(graph[f] - declared[f]) for f in graph if graph[f] - declared[f]}
    assert undeclared == {}, f"imports functions/README.md does not list: {undeclared}"
    # The map itself must point down: its own edges have no cycle either.
    list(graphlib.TopologicalSorter(declared).static_order())


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The graph is computed, not assumed: an import of a family from the kernel (a
    TYPE_CHECKING one, inside a function) is found and closes a cycle."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "def f():\n"
        "    if TYPE_CHECKING:\n"
        "        from functions.memory import memory_service\n"
    )
    assert "functions.memory.memory_service" in imported_modules(probe, ["functions"])
    graph = import_graph()
    graph["kernel"] = {"memory"}
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError:
        pass
    else:
        raise AssertionError("a kernel -> memory import was not seen as a cycle")
