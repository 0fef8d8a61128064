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
