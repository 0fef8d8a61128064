"""Every module imports alone, in a fresh interpreter: no import cycle held together by the
order in which some worker happens to import things, and no `__init__` that loads more
than its own package needs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

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


def third_party() -> list[str]:
    """The packages the product imports at module level that are not ours."""
    names: set[str] = set()
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.Import):
                    names |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module.split(".")[0])
    return sorted(names - set(PACKAGES) - {"__future__"})


# One interpreter loads the third-party packages the product uses, then forks a child per
# module of ours; each child imports its module with nothing of ours loaded, as a fresh
# interpreter would, without starting ~400 interpreters that each load numpy, nats, starlette
# ... again (57 s of CPU -> a few).
_FORK_EACH = r"""
import importlib, os, sys
sys.dont_write_bytecode = False  # a module the first child compiles, the others read
for name in sys.argv[1].split(","):
    try:
        importlib.import_module(name)
    except Exception:
        pass
assert not any(m.split(".")[0] in sys.argv[2].split(",") for m in sys.modules), "ours loaded"
for module in sys.stdin.read().split():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            importlib.import_module(module)
        except BaseException as exc:
            os.write(w, f"{type(exc).__name__}: {exc}".encode()[:2000])
            os._exit(1)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        err = f.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    print(module, code, " ".join(err.split()), sep="\t", flush=True)
"""


@pytest.mark.timeout(600)
def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    mods = modules()
    assert len(mods) > 100  # the walk found the tree
    proc = subprocess.run(
        [sys.executable, "-c", _FORK_EACH, ",".join(third_party()), ",".join(PACKAGES)],
        cwd=ROOT,
        input="\n".join(mods),
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [line.split("\t") for line in proc.stdout.splitlines()]
    assert [r[0] for r in results] == mods  # every module was tried
    failed = {m: err for m, code, err in results if code != "0"}
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
