"""One way to read settings: every environment variable a process reads is declared once,
parsed by one function per type, and read through this module (tests/layout holds that
nothing else reads or writes `os.environ`).

An area is a frozen dataclass whose fields declare their variable with `flag`, `integer`,
`number`, `duration`, `size`, `text`, `choice`, `path` or `items`: its name (older names
after it, read when the first is unset), its default, bounds or choices, and a one-line
doc. `load(Area)` reads the area from the process environment, `load(Area, env)` from a
mapping. Every boolean means one thing: 1/true/yes/on or 0/false/no/off (any case, blanks
around ignored); an empty or unset variable takes its default; any other value is a
`SettingsError` naming the variable, the value and what is accepted.

    @dataclass(frozen=True)
    class SearchSettings:
        freshness: float = duration("SEARCH_FRESHNESS_SECONDS", 2.0, "How long a query waits")

Areas are found through the `engine.settings` entry points (`name = "module:Class"`), so the
engine names none but its own two: `python -m engine run` checks every area in the
environment of every worker before it starts one, and `python -m engine settings
--markdown` prints the table of every variable (docs/CONFIG.md).
"""

from __future__ import annotations

from engine._engine_settings import (
    LOG_LEVELS,
    EngineSettings,
    WorkerIdentity,
    engine_settings,
    worker_identity,
)
from engine._setting import (
    FALSE,
    TRUE,
    Setting,
    SettingsError,
    choice,
    declarations,
    declared,
    duration,
    environ,
    flag,
    integer,
    is_set,
    items,
    load,
    number,
    path,
    read,
    set_default,
    settings_of,
    size,
    text,
    update,
)
from engine._settings_registry import AREA_GROUP, areas, check, markdown

__all__ = [
    "AREA_GROUP",
    "FALSE",
    "LOG_LEVELS",
    "TRUE",
    "EngineSettings",
    "Setting",
    "SettingsError",
    "WorkerIdentity",
    "areas",
    "check",
    "choice",
    "declarations",
    "declared",
    "duration",
    "engine_settings",
    "environ",
    "flag",
    "integer",
    "is_set",
    "items",
    "load",
    "markdown",
    "number",
    "path",
    "read",
    "set_default",
    "settings_of",
    "size",
    "text",
    "update",
    "worker_identity",
]
