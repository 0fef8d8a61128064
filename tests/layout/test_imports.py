"""Every module imports alone, in a fresh interpreter: no import cycle held together by the
order in which some worker happens to import things, and no `__init__` that loads more
than its own package needs."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "functions", "triggers", "workers")


def modules() -> list[str]:
    out = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__main__":
                continue  # entry points run, they are not imported
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out.append(".".join(parts))
    return out


def _import_alone(module: str) -> tuple[str, int, str]:
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stderr.strip().splitlines()
    return module, proc.returncode, lines[-1] if lines else ""


@pytest.mark.timeout(600)  # ~400 interpreters on 2 cores: past the default 120 s under load
def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    mods = modules()
    assert len(mods) > 100  # the walk found the tree
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(_import_alone, mods))
    failed = {m: err for m, rc, err in results if rc != 0}
    assert failed == {}


def test_package_inits_load_nothing_of_other_packages() -> None:
    """Importing a package's `__init__` pulls in no other package of ours."""
    code = (
        "import sys, importlib; importlib.import_module(sys.argv[1]); "
        "print(' '.join(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('engine', 'functions', 'triggers', 'workers'))))"
    )
    leaks = {}
    for init in sorted(ROOT.glob("*/**/__init__.py")):
        pkg = ".".join(init.parent.relative_to(ROOT).parts)
        if pkg.split(".")[0] not in PACKAGES or pkg == "engine":
            continue
        proc = subprocess.run(
            [sys.executable, "-c", code, pkg], cwd=ROOT, capture_output=True, text=True
        )
        loaded = set(proc.stdout.split())
        foreign = {
            m
            for m in loaded
            if not (m == pkg or m.startswith(pkg + ".") or pkg.startswith(m + "."))
        }
        if foreign:
            leaks[pkg] = sorted(foreign)
    assert leaks == {}
