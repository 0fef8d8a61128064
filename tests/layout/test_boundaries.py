"""The memory domain reaches the bus only through the engine's API: no module under
functions/ imports nats-py, and nothing outside the engine imports its private modules.
(No module reads another's private attributes: tests/layout/test_private_attributes.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = sorted((ROOT / "functions").rglob("*.py"))


def _trees() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(ROOT)), ast.parse(p.read_text())) for p in FUNCTIONS]


def test_no_module_under_functions_imports_nats() -> None:
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            found += [f"{path}:{node.lineno} {n}" for n in names if n.split(".")[0] == "nats"]
    assert len(FUNCTIONS) > 50
    assert found == []


# ---- the engine's boundary ---------------------------------------------------------------
OUTSIDE_ENGINE = [
    p
    for d in ("functions", "triggers", "workers", "ops", "tests")
    for p in sorted((ROOT / d).rglob("*.py"))
    if "node_modules" not in p.parts
]
ENGINE = sorted((ROOT / "engine").glob("*.py"))
ENGINE_TESTS = ROOT / "tests" / "engine"
"""The engine's own white-box tests (span id pools, sampling bounds, engine/_natspy.py
against nats-py's code) may import its private modules; nothing else outside it may."""


def _engine_private_imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("engine._")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("engine._"):
                out.append(node.module)
            elif node.module == "engine":
                out += [f"engine.{a.name}" for a in node.names if a.name.startswith("_")]
    return out


def test_nothing_outside_the_engine_imports_its_private_modules() -> None:
    found = {
        str(p.relative_to(ROOT)): _engine_private_imports(p)
        for p in OUTSIDE_ENGINE
        if ENGINE_TESTS not in p.parents
    }
    assert len(found) > 150
    assert {k: v for k, v in found.items() if v} == {}


def test_the_engine_names_no_product_and_no_operation_has_a_rest_twin() -> None:
    for path in ENGINE:
        text = path.read_text().lower()
        assert "agentmemory" not in text, path.name
    for path in [*OUTSIDE_ENGINE, *ENGINE, ROOT / "config" / "engine.yaml"]:
        if path.name == "test_boundaries.py":
            continue
        assert "mem::rest::" not in path.read_text(), path
