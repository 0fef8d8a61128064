"""The memory domain reaches the bus only through the engine's API: no module under
functions/ imports nats-py, and none reads a private attribute of an object it does not
define (a nats-py connection's `_nc`, a bucket's `kv._js`, an engine Client's `_js`)."""

from __future__ import annotations

import ast
from pathlib import Path

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


def test_functions_read_no_private_attribute_of_objects_they_do_not_define() -> None:
    trees = _trees()
    own: set[str] = set()  # private attributes functions/ classes give themselves
    for _, tree in trees:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and isinstance(node.ctx, ast.Store)
            ):
                own.add(node.attr)
            elif isinstance(node, ast.FunctionDef) and node.name.startswith("_"):
                own.add(node.name)
    found = []
    for path, tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            if node.attr.startswith("__") or node.attr in own:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append(f"{path}:{node.lineno} {ast.unparse(node)}")
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


def test_nats_py_private_attributes_are_read_in_one_engine_module_only() -> None:
    """Attributes with a leading underscore of objects the engine does not define (a
    nats-py connection, micro endpoint or module) appear in engine/_natspy.py only."""
    trees = [(p, ast.parse(p.read_text())) for p in ENGINE]
    own: set[str] = set()
    for _, tree in trees:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and isinstance(node.ctx, ast.Store)
            ):
                own.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Assign):
                own.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
    by_module: dict[str, list[str]] = {}
    for path, tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            if node.attr.startswith("__") or node.attr.endswith("_") or node.attr in own:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            by_module.setdefault(path.name, []).append(ast.unparse(node))
    assert set(by_module) == {"_natspy.py"}, by_module


def test_the_engine_names_no_product_and_no_operation_has_a_rest_twin() -> None:
    for path in ENGINE:
        text = path.read_text().lower()
        assert "agentmemory" not in text, path.name
    for path in [*OUTSIDE_ENGINE, *ENGINE, ROOT / "config" / "engine.yaml"]:
        if path.name == "test_boundaries.py":
            continue
        assert "mem::rest::" not in path.read_text(), path
