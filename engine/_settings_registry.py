"""Every installed area of settings (the engine's own and the `engine.settings` entry
points), checked in an environment, and written out as the table of every variable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from engine._engine_settings import EngineSettings, WorkerIdentity
from engine._setting import Setting, SettingsError, settings_of

AREA_GROUP = "engine.settings"
"""Entry points naming an area: `name = "package.module:Class"` (a dataclass of settings)."""


def areas() -> dict[str, type[Any]]:
    """Area name -> its class: the engine's two, then the installed ones by name."""
    from importlib.metadata import entry_points  # ~0.1 s: only the start's check pays it

    out: dict[str, type[Any]] = {"engine": EngineSettings, "engine worker": WorkerIdentity}
    for ep in sorted(entry_points(group=AREA_GROUP), key=lambda e: e.name):
        out[ep.name] = ep.load()
    return out


def check(
    envs: Iterable[tuple[str, Mapping[str, str]]], extra: Iterable[Setting] = ()
) -> list[str]:
    """What is wrong in each labelled environment (a worker's): one line per variable with
    a value its declaration refuses, naming where it was found. Empty: all good. `extra`:
    settings declared where their name is known at run time (a layout's)."""
    found: dict[str, list[str]] = {}
    every = [s for area in areas().values() for s in settings_of(area)] + list(extra)
    for label, env in envs:
        for s in every:
            try:
                s.read(env)
            except SettingsError as exc:
                found.setdefault(str(exc), []).append(label)
    return [f"{msg} (in {', '.join(dict.fromkeys(where))})" for msg, where in found.items()]


def _default(s: Setting) -> str:
    if s.shown:
        return s.shown
    d = s.default
    if d is None or d == "" or d == ():
        return "-"
    if isinstance(d, bool):
        return "true" if d else "false"
    if isinstance(d, tuple):
        return f"`{','.join(d)}`"
    if isinstance(d, Path):
        return f"`{d}`"
    if s.kind == "size" and isinstance(d, int) and d % (1 << 20) == 0:
        return f"`{d >> 20}M`"
    return f"`{d}`"


def _type(s: Setting) -> str:
    what = "boolean" if s.kind == "bool" else s.accepted()
    if s.clamp:
        what += " (beyond: the nearest bound)"
    return what


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(settings_file: str, layout: list[Setting]) -> str:
    """docs/CONFIG.md: how a value is read, then each area's variables (the layout's after
    the engine's: their names come from the engine's config)."""
    out = [
        "# Configuration",
        "",
        "Every environment variable the service reads, by area. Generated from the settings'",
        "declarations by `python -m engine settings --markdown`; tests/layout/test_settings.py",
        "holds this file equal to it, so edit the declarations, not this file.",
        "",
        f"Values come from the process environment, then from `{settings_file}` (one",
        "`KEY=value` a line; the process environment wins). `python -m engine run` checks",
        "every variable in every worker's environment before it starts one, and stops",
        "naming the variable when a value is not one it accepts.",
        "",
        "- Booleans: `1`, `true`, `yes`, `on` or `0`, `false`, `no`, `off`, in any case.",
        "- Empty or unset: the default. Any other value stops the start.",
        "- Several names: the first one set is read (upstream's name first).",
        "",
        "To add a variable, declare it as a field of its area (the `settings.py` beside the",
        "code it configures: `flag`, `integer`, `duration`... of engine/settings.py), read it",
        "with `load(Area)`, and regenerate this file. A new area is a frozen dataclass named",
        "under the `engine.settings` entry points of pyproject.toml.",
        "",
    ]
    sections = [
        (area, (cls.__doc__ or "").strip().split("\n\n")[0], settings_of(cls))
        for area, cls in areas().items()
    ]
    sections.insert(2, ("layout", _LAYOUT_DOC, layout))
    for area, doc, declared in sections:
        out += [f"## {area}", "", " ".join(line.strip() for line in doc.splitlines()), ""]
        out += ["| variable | type | default | what it does |", "|---|---|---|---|"]
        for s in declared:
            names = " or ".join(f"`{n}`" for n in s.names)
            out.append(f"| {names} | {_cell(_type(s))} | {_cell(_default(s))} | {_cell(s.doc)} |")
        out.append("")
    return "\n".join(out)


_LAYOUT_DOC = """Where the instance lives, under the names the engine config's `layout:`
gives them (its `env_prefix`); the command line's --data-dir, --instance and --port win."""
