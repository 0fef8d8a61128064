"""The product's stack (tests/fixtures.py's `Stack`) for upstream's clients, and what the
upstream package declares: its route table and tool registry, read from the
installed files (tests/upstream/install.sh), not from a copy."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.fixtures import STACK_SECRET, Stack, start_stack

HERE = Path(__file__).resolve().parent
PKG = HERE / "node_modules" / "@agentmemory"
DIST = PKG / "agentmemory" / "dist"
SCRIPTS = PKG / "agentmemory" / "plugin" / "scripts"
SECRET = STACK_SECRET


def ensure_packages() -> None:
    if (SCRIPTS / "post-commit.mjs").exists() and (PKG / "mcp" / "bin.mjs").exists():
        return
    subprocess.run(["bash", str(HERE / "install.sh")], check=True, timeout=300)


def upstream_routes() -> list[tuple[str, str]]:
    """(method, path) of every route the upstream server registers (its api_path /
    http_method pairs, the MCP endpoints included)."""
    ensure_packages()
    found: set[tuple[str, str]] = set()
    pair = re.compile(r'api_path:\s*"([^"]+)",\s*http_method:\s*"([A-Z]+)"')
    for f in DIST.glob("src-*.mjs"):
        found.update((m, p) for p, m in pair.findall(f.read_text(errors="replace")))
    return sorted(found, key=lambda r: (r[1], r[0]))


def upstream_tools() -> dict[str, dict[str, Any]]:
    """Tool name -> input schema, from the package's tool registry."""
    ensure_packages()
    text = next(DIST.glob("tools-registry-*.mjs")).read_text()
    names = re.findall(r'^\t+name: "(memory_[a-z_]+)"', text, re.M)
    return {n: {} for n in names}


def essential_tools() -> set[str]:
    text = next(DIST.glob("tools-registry-*.mjs")).read_text()
    block = text[text.index("const ESSENTIAL_TOOLS") :]
    block = block[: block.index("]")]
    return set(re.findall(r'"(memory_[a-z_]+)"', block))


def base_tools() -> set[str]:
    """The registry's first list (CORE_TOOLS): the 14 base tools upstream's README lists."""
    text = next(DIST.glob("tools-registry-*.mjs")).read_text()
    block = text[text.index("const CORE_TOOLS") : text.index("const V040_TOOLS")]
    return set(re.findall(r'^\t\tname: "(memory_[a-z_]+)"', block, re.M))


def start(tmp: Path, **env: str) -> Stack:
    """The product stack, once upstream's packages are installed."""
    ensure_packages()
    return start_stack(tmp, SECRET, **env)


def node_env(url: str, home: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "AGENTMEMORY_URL": url,
        "AGENTMEMORY_SECRET": SECRET,
        "AGENTMEMORY_PROJECT_NAME": "surface-demo",
        "HOME": str(home),
        **extra,
    }


def run_script(script: str, payload: Any, env: dict[str, str], cwd: Path) -> str:
    """Run an upstream hook script with `payload` on stdin; its stdout."""
    node = shutil.which("node") or "node"
    out = subprocess.run(
        [node, str(SCRIPTS / script)],
        input=json.dumps(payload).encode(),
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode()
