"""The `agentmemory` command's entry point: a check that our top-level packages are ours,
then the CLI.

This distribution installs four import packages at the top of site-packages: `engine`,
`functions`, `triggers` and `workers`. In an environment shared with other software,
another distribution with a package of one of those names would shadow or overwrite ours,
and the failure would surface later as a puzzling ImportError deep in a worker. Checked
here first, with the standard library only, it is one clear message and a way out.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from pathlib import Path

PACKAGES = ("engine", "functions", "triggers", "workers")
DISTRIBUTION = "agentmemory-nats"
ADVICE = (
    "install agentmemory in an environment of its own: `pipx install agentmemory-nats` "
    "or `uv tool install agentmemory-nats`"
)


def clashes() -> list[str]:
    """What is wrong with our four packages in this environment (empty: nothing)."""
    from importlib.util import find_spec

    problems: list[str] = []
    here = Path(__file__).resolve().parents[2]  # the folder that holds `workers`
    for name in PACKAGES:
        spec = find_spec(name)
        if spec is None or spec.origin is None:
            problems.append(f"the package `{name}` is missing or not a regular package")
            continue
        if Path(spec.origin).resolve().parents[1] != here:
            problems.append(
                f"`import {name}` loads {Path(spec.origin).parent}, not ours in {here / name}"
            )
    for name, recorded in _recorded(here).items():
        path = here / name / "__init__.py"
        try:
            digest = hashlib.sha256(path.read_bytes()).digest()
        except OSError:
            continue
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != recorded:
            problems.append(
                f"{path} is not the file {DISTRIBUTION} installed: another distribution "
                f"replaced the package `{name}`"
            )
    return problems


def _recorded(root: Path) -> dict[str, str]:
    """The sha256 our wheel's RECORD gives each package's `__init__.py` (none in a source
    checkout or an editable install, whose RECORD lists no package files)."""
    out: dict[str, str] = {}
    for record in root.glob(DISTRIBUTION.replace("-", "_") + "-*.dist-info/RECORD"):
        for line in record.read_text().splitlines():
            path, _, rest = line.partition(",")
            name = path.removesuffix("/__init__.py")
            if name in PACKAGES and path.endswith("/__init__.py") and rest.startswith("sha256="):
                out[name] = rest.removeprefix("sha256=").partition(",")[0]
    return out


def main() -> None:
    problems = clashes()
    if problems:
        sys.stderr.write(
            "error: agentmemory cannot run in this Python environment:\n"
            + "".join(f"  - {p}\n" for p in problems)
            + f"{ADVICE}\n"
        )
        raise SystemExit(2)
    from engine.settings import set_default
    from workers import ENGINE_CONFIG

    # The layout every command and the processes it starts read, without a search of the
    # installed distributions for the engine's default.
    set_default("ENGINE_CONFIG", str(ENGINE_CONFIG))
    from workers.cli.service_cmds import main as run

    run()


if __name__ == "__main__":
    main()
