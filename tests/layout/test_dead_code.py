"""No dead code in the product: vulture (a well-kept dead-code finder) over engine/,
functions/, triggers/ and workers/, with the tests and ops scanned too so that what they call
counts as used.

At vulture's 60% confidence (functions, methods, classes, module-level names), with what the
framework calls by reflection set apart: methods marked `@operation` (served by
`Worker.serve`), handlers registered with `@worker.function`, CLI commands, the trigger
plug-ins named by pyproject's entry points, and the overrides a
library calls. Unused *attributes and class-level fields* are not reported: they are msgspec
Struct fields, which the codec reads and writes by name, not the code."""

from __future__ import annotations

import linecache
import re
import tomllib
from pathlib import Path

import pytest
import vulture

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("engine", "functions", "triggers", "workers")
CALLED_BY_REFLECTION = ["@operation", "@*.function", "@*.command"]
"""Served by `Worker.serve`, registered with a worker, a typer command."""
LIBRARY_HOOKS = {
    "__getattr__": "engine/__init__.py: PEP 562 lazy attributes",
    "capture_signals": "triggers/serving.py: uvicorn.Server calls it",
    "main_loop": "triggers/serving.py: uvicorn.Server calls it",
}


def entry_point_names() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names: set[str] = set()
    for group in pyproject["project"].get("entry-points", {}).values():
        names.update(target.rsplit(":", 1)[1] for target in group.values())
    return names


def dead_code() -> list[str]:
    v = vulture.Vulture(
        ignore_names=[*LIBRARY_HOOKS, *entry_point_names()],
        ignore_decorators=CALLED_BY_REFLECTION,
    )
    v.scavenge([str(ROOT / d) for d in (*PRODUCT, "tests", "ops")], exclude=["node_modules"])
    found: list[str] = []
    for item in v.get_unused_code(min_confidence=60):
        rel = Path(item.filename).resolve().relative_to(ROOT)
        if rel.parts[0] not in PRODUCT:
            continue
        line = linecache.getline(str(ROOT / rel), item.first_lineno)
        if item.typ in ("variable", "attribute") and re.match(r"\s", line):
            continue  # a field of a class (a Struct's), or a local
        found.append(f"{rel}:{item.first_lineno}: unused {item.typ} {item.name!r}")
    return found


def test_the_product_holds_no_dead_code() -> None:
    assert dead_code() == []


def test_the_check_finds_an_unused_function(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("def used():\n    return 1\n\n\ndef orphan():\n    return 2\n")
    (tmp_path / "main.py").write_text("from mod import used\n\nprint(used())\n")
    v = vulture.Vulture(ignore_decorators=CALLED_BY_REFLECTION)
    v.scavenge([str(tmp_path)])
    assert [i.name for i in v.get_unused_code(min_confidence=60)] == ["orphan"]
