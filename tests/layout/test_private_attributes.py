"""No module reads a private attribute of another module's class: `expr._name` appears only
where `expr` is `self`, `cls` or `super()`, or where `_name` is a private name the same module
defines (an attribute its classes set, a method, a module-level name). What another module
needs is given a public method or property by its owner, so a rename inside one module
never breaks another.

One module is let through: engine/_natspy.py, the single place allowed to use nats-py's
internals, on the exact nats-py version pyproject.toml pins and tests/engine/test_headers.py
proves it against."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("engine", "functions", "workers", "triggers", "ops")
ALLOWED_MODULES = {"engine/_natspy.py"}
STDLIB_API = {"_replace", "_asdict", "_make", "_fields", "_field_defaults"}
"""namedtuple's documented methods (underscored only so as not to clash with field names)."""
STDLIB_CALLS = {"os._exit"}
"""Documented: leave the process without running cleanup (a forked hook's child)."""


def _defined(tree: ast.Module) -> set[str]:
    """Names the module gives itself: classes, functions and methods, module and class
    level assignments, attributes set on `self`/`cls`."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                out.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
                out.update(
                    a.attr
                    for a in ast.walk(target)
                    if isinstance(a, ast.Attribute)
                    and isinstance(a.value, ast.Name)
                    and a.value.id in ("self", "cls")
                )
    return out


def _own_object(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def private_reads(source: str) -> list[str]:
    """`expr._name` reads and writes of private names this source does not define."""
    tree = ast.parse(source)
    own = _defined(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        name = node.attr
        if name.startswith("__") and name.endswith("__"):
            continue  # dunder: the language's own protocol
        if len(name) > 2 and name.endswith("_") and not name.startswith("__"):
            continue  # sunder (`_name_`, `_value_`): enum's documented API
        if name in own or name in STDLIB_API or _own_object(node.value):
            continue
        text = ast.unparse(node)
        if text in STDLIB_CALLS:
            continue
        found.append(f"{node.lineno} {text}")
    return found


def _modules() -> list[Path]:
    return [
        p
        for folder in FOLDERS
        for p in sorted((ROOT / folder).rglob("*.py"))
        if "node_modules" not in p.parts
    ]


def test_no_module_reads_a_private_attribute_of_another_modules_class() -> None:
    modules = _modules()
    assert len(modules) > 300  # the walk found the tree
    found = {}
    for path in modules:
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED_MODULES:
            continue
        reads = private_reads(path.read_text())
        if reads:
            found[rel] = reads
    assert found == {}


def test_the_allowed_module_is_the_one_that_uses_nats_py_internals() -> None:
    # Still there and still needing the exception: else the allowance should go.
    for rel in ALLOWED_MODULES:
        assert private_reads((ROOT / rel).read_text()), rel


def test_the_check_sees_a_private_read_across_modules() -> None:
    source = (
        "from engine._client import Client\n"
        "class Stream:\n"
        "    def __init__(self, client: Client) -> None:\n"
        "        self._sub = None\n"
        "        self.js = client._js\n"
        "    def _own(self) -> None:\n"
        "        other = Stream(None)\n"
        "        other._sub = self._own() or super()._hidden\n"
        "        _tracing._enabled = other.__class__\n"
    )
    assert private_reads(source) == ["5 client._js", "9 _tracing._enabled"]
