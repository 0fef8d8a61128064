"""A setting: its declaration, the one parser of its value, and reading an area of them
from the environment. The only module of the engine that touches `os.environ` (the public
face is engine/settings.py)."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
Kind = Literal["bool", "int", "float", "duration", "size", "str", "enum", "path", "list"]
Choices = tuple[str, ...] | Callable[[], tuple[str, ...]]
"""A closed set of values, or a function naming it when it is known only at run time (the
installed trigger plug-ins)."""
T = TypeVar("T")
A = TypeVar("A")
_KEY = "engine.setting"
_INT = re.compile(r"[+-]?\d+")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """`64M`, `1G`, `512MiB`, `1048576` -> bytes (powers of 1024, as nats-server reads them)."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (e.g. 64M, 1G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


class SettingsError(ValueError):
    """A variable whose value is not one its declaration accepts."""

    def __init__(self, name: str, value: str, accepted: str) -> None:
        self.name, self.value, self.accepted = name, value, accepted
        super().__init__(f"{name}={value!r} is not valid: expected {accepted}")


@dataclasses.dataclass(frozen=True)
class Setting:
    """One variable: what it is called, how its value is read, what it does."""

    names: tuple[str, ...]
    """The variable first, then older names read when it is unset."""
    kind: Kind
    default: Any
    doc: str
    lo: float | None = None
    hi: float | None = None
    clamp: bool = False
    """Out of bounds: the nearest bound (what the code always did), not an error."""
    choices: Choices = ()
    synonyms: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Other spellings of a choice (`s2` for `all`)."""
    unit: str = ""
    """A duration's unit, which its name says too (`_MS`, `_SECONDS`)."""
    shown: str = ""
    """The default as the docs say it, when it is worked out at run time."""

    @property
    def name(self) -> str:
        return self.names[0]

    def options(self) -> tuple[str, ...]:
        return self.choices() if callable(self.choices) else self.choices

    def accepted(self) -> str:
        """What a value may be, for an error message and the docs."""
        if self.kind == "bool":
            return "true or false (1/true/yes/on, 0/false/no/off)"
        if self.kind in ("enum", "list") and self.options():
            one = "one of " + ", ".join(self.options())
            return one if self.kind == "enum" else f"a comma-separated list, each {one}"
        what = {
            "int": "a whole number",
            "float": "a number",
            "duration": f"a number of {self.unit or 'seconds'}",
            "size": "a size (bytes, or 512K, 64M, 1G)",
            "str": "text",
            "path": "a path",
            "list": "a comma-separated list",
        }[self.kind]
        if self.lo is not None and self.hi is not None:
            return f"{what} from {_num(self.lo)} to {_num(self.hi)}"
        if self.lo is not None:
            return f"{what} of at least {_num(self.lo)}"
        return what

    def parse(self, raw: str, name: str | None = None) -> Any:
        """`raw` (not blank) as this setting's type; SettingsError when it is not one."""
        name = name or self.name
        value = raw.strip()
        if self.kind == "bool":
            low = value.lower()
            if low in TRUE or low in FALSE:
                return low in TRUE
            raise SettingsError(name, raw, self.accepted())
        if self.kind in ("int", "float", "duration"):
            return self._number(value, raw, name)
        if self.kind == "size":
            try:
                return parse_size(value)
            except ValueError:
                raise SettingsError(name, raw, self.accepted()) from None
        if self.kind == "enum":
            return self._choice(value, raw, name)
        if self.kind == "path":
            return Path(value).expanduser()
        if self.kind == "list":
            items = tuple(v.strip() for v in value.split(",") if v.strip())
            return tuple(self._choice(v, raw, name) for v in items) if self.options() else items
        return value

    def _number(self, value: str, raw: str, name: str) -> int | float:
        n: int | float
        try:
            if self.kind == "int":
                if not _INT.fullmatch(value):
                    raise ValueError(value)
                n = int(value)
            else:
                n = float(value)
                if not math.isfinite(n) or (self.kind == "duration" and n < 0):
                    raise ValueError(value)
        except ValueError:
            raise SettingsError(name, raw, self.accepted()) from None
        bound = (
            self.lo
            if self.lo is not None and n < self.lo
            else self.hi
            if self.hi is not None and n > self.hi
            else None
        )
        if bound is not None:
            if not self.clamp:
                raise SettingsError(name, raw, self.accepted())
            n = bound
        # A whole number stays one: a duration whose default is an int (milliseconds) too.
        whole = self.kind == "int" or type(self.default) is int
        return int(n) if whole else float(n)

    def _choice(self, value: str, raw: str, name: str) -> str:
        low = value.lower()
        low = self.synonyms.get(low, low)
        for c in self.options():
            if c.lower() == low:
                return c
        raise SettingsError(name, raw, self.accepted())

    def read(self, env: Mapping[str, str]) -> Any:
        for name in self.names:
            raw = env.get(name, "")
            if raw.strip():
                return self.parse(raw, name)
        return self.default


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# ---- declaring: each returns a dataclass field carrying its Setting --------------------
Names = str | tuple[str, ...]


def _field(names: Names, kind: Kind, default: Any, doc: str, **kw: Any) -> Any:
    names = (names,) if isinstance(names, str) else names
    setting = Setting(names, kind, default, doc, **kw)
    return dataclasses.field(default=default, metadata={_KEY: setting})


def flag(names: Names, default: T, doc: str, *, shown: str = "") -> T:
    """true/false (1/true/yes/on, 0/false/no/off)."""
    out: T = _field(names, "bool", default, doc, shown=shown)
    return out


def integer(
    names: Names,
    default: T,
    doc: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
    clamp: bool = False,
    shown: str = "",
) -> T:
    out: T = _field(names, "int", default, doc, lo=lo, hi=hi, clamp=clamp, shown=shown)
    return out


def number(
    names: Names,
    default: T,
    doc: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    clamp: bool = False,
) -> T:
    out: T = _field(names, "float", default, doc, lo=lo, hi=hi, clamp=clamp)
    return out


def duration(
    names: Names,
    default: T,
    doc: str,
    *,
    unit: str = "seconds",
    lo: float | None = None,
    clamp: bool = False,
) -> T:
    """A number of `unit` (0 or more), the unit its name says: `_MS`, `_SECONDS`, `_DAYS`."""
    out: T = _field(names, "duration", default, doc, unit=unit, lo=lo, clamp=clamp)
    return out


def size(names: Names, default: T, doc: str, *, shown: str = "") -> T:
    """Bytes: `1048576`, `512K`, `64M`, `1G` (powers of 1024, as nats-server reads them)."""
    out: T = _field(names, "size", default, doc, shown=shown)
    return out


def text(names: Names, default: T, doc: str, *, shown: str = "") -> T:
    out: T = _field(names, "str", default, doc, shown=shown)
    return out


def choice(
    names: Names,
    default: T,
    choices: Choices,
    doc: str,
    *,
    synonyms: Mapping[str, str] | None = None,
    shown: str = "",
) -> T:
    """One of a closed set (any case); `synonyms` maps other spellings onto a choice."""
    out: T = _field(
        names, "enum", default, doc, choices=choices, synonyms=synonyms or {}, shown=shown
    )
    return out


def path(names: Names, default: T, doc: str, *, shown: str = "") -> T:
    """A file or folder (`~` expanded)."""
    out: T = _field(names, "path", default, doc, shown=shown)
    return out


def items(names: Names, default: T, doc: str, *, choices: Choices = (), shown: str = "") -> T:
    """Comma-separated values (blanks around each dropped, empty ones skipped), as a tuple;
    each one of `choices` when given."""
    out: T = _field(names, "list", default, doc, choices=choices, shown=shown)
    return out


# ---- reading an area ------------------------------------------------------------------
Entry = tuple[str, "Setting | type[Any]"]


_DECLARATIONS: dict[type[Any], tuple[Entry, ...]] = {}
_NAMES: dict[type[Any], tuple[str, ...]] = {}
_LOADED: dict[tuple[type[Any], tuple[str | None, ...]], Any] = {}
_LOADED_MAX = 256


def declarations(area: type[Any]) -> tuple[Entry, ...]:
    """The fields of `area` that declare a setting, and those holding a nested area (a
    dataclass field whose default_factory is an area), in field order."""
    out: list[Entry] = []
    for f in dataclasses.fields(area):
        setting = f.metadata.get(_KEY)
        if isinstance(setting, Setting):
            out.append((f.name, setting))
        elif isinstance(f.default_factory, type) and dataclasses.is_dataclass(f.default_factory):
            if declarations(f.default_factory):
                out.append((f.name, f.default_factory))
    _DECLARATIONS[area] = tuple(out)
    return _DECLARATIONS[area]


def declared(area: type[Any], field: str) -> Setting:
    """The setting `area.field` declares (to read that one alone)."""
    for name, d in declarations(area):
        if name == field and isinstance(d, Setting):
            return d
    raise KeyError(f"{area.__name__}.{field} declares no setting")


def settings_of(area: type[Any]) -> list[Setting]:
    """Every setting of `area`, nested areas' included, in declaration order."""
    out: list[Setting] = []
    for _, d in declarations(area):
        out.extend([d] if isinstance(d, Setting) else settings_of(d))
    return out


def load(area: type[A], env: Mapping[str, str] | None = None) -> A:
    """`area` read from `env`, else from this process's environment. The process's is
    parsed once per distinct set of values (a test that changes a variable gets fresh
    settings; a caller that loads often pays a few dictionary lookups)."""
    if env is not None:
        return _build(area, env)
    names = _NAMES.get(area)
    if names is None:
        names = _NAMES[area] = tuple(n for s in settings_of(area) for n in s.names)
    key = (area, tuple(os.environ.get(n) for n in names))
    found: A | None = _LOADED.get(key)
    if found is None:
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.clear()
        found = _LOADED[key] = _build(area, os.environ)
    return found


def _build(area: type[A], env: Mapping[str, str]) -> A:
    values = {
        name: d.read(env) if isinstance(d, Setting) else _build(d, env)
        for name, d in declarations(area)
    }
    return area(**values)


def read(setting: Setting, env: Mapping[str, str] | None = None) -> Any:
    """One setting, declared where its name is known only at run time (a layout's
    `<PREFIX>_DATA_DIR`)."""
    return setting.read(os.environ if env is None else env)


def is_set(name: str) -> bool:
    """Whether the process environment gives `name` a (non-blank) value."""
    return bool(os.environ.get(name, "").strip())


# ---- the environment of this process and of the ones it starts -------------------------
def environ(**extra: str) -> dict[str, str]:
    """A copy of this process's environment with `extra` over it: the environment of a
    child process."""
    return {**os.environ, **extra}


def set_default(name: str, value: str) -> None:
    """Give `name` a value in this process (and the processes it starts) unless it has one."""
    os.environ.setdefault(name, value)


def update(values: Mapping[str, str], remove: Iterable[str] = ()) -> None:
    """Change this process's environment: `remove` those names, then set `values`."""
    for name in remove:
        os.environ.pop(name, None)
    os.environ.update(values)
