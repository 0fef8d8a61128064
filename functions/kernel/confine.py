"""Where an operation may read or write files of the service's machine: under the data
dir, `~/.agentmemory`, or a root of AGENTMEMORY_IMPORT_ROOT (upstream's path guard,
0.9.30). A path is resolved through its nearest existing ancestor, so a symlink or `..`
cannot lead out of a root; a refusal names the path and the roots, and says which
variable widens them."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from functions.kernel.settings import data_dir, kernel_settings

IMPORT_ROOT = "AGENTMEMORY_IMPORT_ROOT"


class OutsideRoots(ValueError):
    """The path is not under an allowed root (or cannot be resolved); the message is the
    reply's `error`."""


def import_roots() -> list[Path]:
    """AGENTMEMORY_IMPORT_ROOT: a list split by the OS path separator (`:`; `;` on
    Windows), `~` expanded; relative entries are ignored (a root must not move with the
    service's working directory)."""
    out: list[Path] = []
    for raw in kernel_settings().import_root.split(os.pathsep):
        entry = raw.strip()
        if not entry:
            continue
        p = Path(entry).expanduser()
        if p.is_absolute():
            out.append(p)
    return out


def allowed_roots(extra: Iterable[Path] = ()) -> list[Path]:
    roots = [Path.home() / ".agentmemory"]
    given = data_dir()
    if given is not None:
        roots.append(given)
    roots += import_roots()
    roots += list(extra)
    seen: dict[str, Path] = {}
    for r in roots:
        seen.setdefault(str(r), r)
    return list(seen.values())


def _real(path: Path) -> Path:
    """The real path of `path`: its nearest existing ancestor resolved (symlinks and all),
    the rest appended; so a path not written yet is judged by where it would land."""
    probe, rest = path, []
    while True:
        try:
            if probe.exists() or probe == probe.parent:
                break
        except OSError:
            break
        rest.append(probe.name)
        probe = probe.parent
    real = probe.resolve()
    for name in reversed(rest):
        if name == "..":
            real = real.parent
        elif name not in ("", "."):
            real = real / name
    return real


def confine(raw: str, extra: Iterable[Path] = ()) -> Path:
    """`raw` as an absolute, real path under an allowed root; OutsideRoots otherwise."""
    if not raw or not raw.strip() or "\x00" in raw:
        raise OutsideRoots("path must be a non-empty string")
    try:
        real = _real(Path(os.path.abspath(Path(raw.strip()).expanduser())))
    except (OSError, RuntimeError, ValueError):
        raise OutsideRoots(f"path {raw[:200]!r} could not be resolved") from None
    roots = allowed_roots(extra)
    for root in roots:
        try:
            base = root.resolve()
        except (OSError, RuntimeError):
            continue
        if real == base or real.is_relative_to(base):
            return real
    listed = ", ".join(str(r) for r in roots)
    raise OutsideRoots(
        f"path {str(real)[:300]} is outside the allowed roots ({listed}). Set {IMPORT_ROOT} "
        "to a directory to allow file access under it."
    )
