"""The hooks' settings (workers/hooks/_settings.py, standard library only) as an
engine.settings area: for docs/CONFIG.md and the check `engine run` makes. Never imported
by a hook."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from engine.settings import duration, flag, integer, items, path, text
from workers.hooks._settings import DECLARED


def _field(name: str, kind: str, default: object, unit: str, doc: str) -> Any:
    if kind == "bool":
        return flag(name, default, doc)
    if kind == "int":
        return integer(name, default, doc, lo=0)
    if kind == "duration":
        return duration(name, default, doc, unit=unit)
    if kind == "list":
        return items(name, default, doc)
    if kind == "path":
        return path(name, default, doc)
    return text(name, default, doc)


_TYPES: dict[str, Any] = {
    "bool": bool,
    "int": int,
    "duration": float,
    "list": tuple[str, ...],
    "path": Path | None,
    "str": str,
}

HookSettings = dataclasses.make_dataclass(
    "HookSettings",
    [
        (name.lower(), _TYPES[kind], _field(name, kind, default, unit, doc))
        for name, kind, default, unit, doc in DECLARED
    ],
    frozen=True,
)
HookSettings.__doc__ = (
    "The agent hook scripts, in the agent's environment (a value they cannot read takes "
    "the default: a hook never stops the agent)."
)
