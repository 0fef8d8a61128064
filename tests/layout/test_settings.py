"""One settings layer: nothing outside it reads or writes the environment, every boolean of
every declared area means one thing, a variable declared twice is declared alike, and
docs/CONFIG.md is the table the declarations generate."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import settings
from engine.paths import default_config, read_layout
from engine.settings import FALSE, TRUE, Setting, SettingsError

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("engine", "functions", "workers", "triggers", "ops")
LAYER = {"engine/_setting.py", "workers/hooks/_settings.py"}
"""The settings layer: engine.settings' reader, and the hooks' standard-library twin (a hook
runs without the project)."""
ENVIRON = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_uses(tree: ast.Module) -> list[str]:
    """Every place a module reads or writes the process environment: `os.environ`,
    `os.getenv` ... however `os` (or `posix`) was imported, and `from os import environ`."""
    modules = {"os", "posix"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name in ("os", "posix")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "posix"):
            names = [a.name for a in node.names if a.name in ENVIRON]
            found += [f"{node.lineno}: from {node.module} import {n}" for n in names]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ENVIRON
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_outside_the_settings_layer_touches_the_environment() -> None:
    files = [
        p
        for d in CHECKED
        for p in sorted((ROOT / d).rglob("*.py"))
        if "node_modules" not in p.parts
    ]
    assert len(files) > 300  # the walk found the tree
    found = {
        rel: uses
        for p in files
        if (rel := str(p.relative_to(ROOT))) not in LAYER
        and (uses := environment_uses(ast.parse(p.read_text())))
    }
    assert found == {}, "read settings through engine.settings (docs/CONFIG.md): " + str(found)


def test_the_check_sees_every_way_of_reaching_the_environment() -> None:
    probe = ast.parse(
        "import os\nimport os as o\nfrom os import environ, path\n"
        "a = os.environ.get('X')\nb = o.getenv('Y')\nos.putenv('Z', '1')\n"
        "c = os.path.join('a', 'b')\n"
    )
    assert sorted(u.split(":")[0] for u in environment_uses(probe)) == ["3", "4", "5", "6"]
    for layer in LAYER:  # the allowed modules do use it: the exemption is not stale
        assert environment_uses(ast.parse((ROOT / layer).read_text())), layer


# ---- one meaning per spelling ------------------------------------------------------------
def _declared(area: type[Any], at: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Setting]]:
    """Each setting of `area` with the attribute path that holds its value."""
    out = []
    for name, d in settings.declarations(area):
        if isinstance(d, Setting):
            out.append(((*at, name), d))
        else:
            out += _declared(d, (*at, name))
    return out


def _every_setting() -> list[tuple[str, type[Any], tuple[str, ...], Setting]]:
    return [
        (area, cls, at, s) for area, cls in settings.areas().items() for at, s in _declared(cls)
    ]


def _value(obj: Any, at: tuple[str, ...]) -> Any:
    for name in at:
        obj = getattr(obj, name)
    return obj


def _spellings(words: tuple[str, ...]) -> list[str]:
    return [v for w in words for v in (w, w.upper(), w.capitalize(), f"  {w}\t")]


BOOLEANS = [(a, cls, at, s) for a, cls, at, s in _every_setting() if s.kind == "bool"]


def test_the_areas_declare_the_booleans_this_test_walks() -> None:
    names = {s.name for *_, s in BOOLEANS}
    # the ones the issue found parsed three ways, among them
    assert {"ENGINE_TRACING", "ENGINE_NATS_MSG_TRACE", "ENGINE_NATSPY_FAST"} <= names
    assert {"GRAPH_EXTRACTION_ENABLED", "SNAPSHOT_ENABLED", "AGENTMEMORY_INJECT_CONTEXT"} <= names
    assert len(names) >= 20


@pytest.mark.parametrize(
    ("area", "cls", "at", "setting"), BOOLEANS, ids=[f"{a}:{s.name}" for a, _, _, s in BOOLEANS]
)
def test_every_boolean_means_one_thing_in_every_spelling(
    area: str, cls: type[Any], at: tuple[str, ...], setting: Setting
) -> None:
    for name in setting.names:
        for raw in _spellings(TRUE):
            assert _value(settings.load(cls, {name: raw}), at) is True, (name, raw)
        for raw in _spellings(FALSE):
            assert _value(settings.load(cls, {name: raw}), at) is False, (name, raw)
        for raw in ("", "  "):
            assert _value(settings.load(cls, {name: raw}), at) == setting.default
        for raw in ("maybe", "enabled", "2", "-1", "y", "tru"):
            with pytest.raises(SettingsError) as caught:
                settings.load(cls, {name: raw})
            message = str(caught.value)
            assert name in message and repr(raw) in message and "1/true/yes/on" in message


def test_the_spellings_are_the_issues() -> None:
    assert TRUE == ("1", "true", "yes", "on") and FALSE == ("0", "false", "no", "off")


def test_a_variable_declared_by_two_areas_is_declared_alike() -> None:
    """A variable two layers read that may not import each other (the REST secret, in the
    http trigger and in the team family; the hooks' own twins) has one type everywhere."""
    kinds: dict[str, set[str]] = {}
    for _, _, _, s in _every_setting():
        for n in s.names:
            kinds.setdefault(n, set()).add(s.kind)
    assert {n: k for n, k in kinds.items() if len(k) > 1} == {}
    assert len(kinds) > 120


def test_a_malformed_value_of_each_area_is_an_error_naming_it() -> None:
    for _, cls, _, s in _every_setting():
        if s.kind in ("str", "path") or (s.kind == "list" and not s.options()):
            continue  # any text is one
        bad = "not-a-value,,x" if s.kind == "list" else "not-a-value"
        with pytest.raises(SettingsError, match=s.name):
            settings.load(cls, {s.name: bad})


def test_the_settings_file_agentmemory_init_writes_names_declared_variables() -> None:
    template = (ROOT / "workers" / "cli" / "env.template").read_text()
    named = {
        line.lstrip("# ").split("=", 1)[0]
        for line in template.splitlines()
        if "=" in line and line.lstrip("# ").split("=", 1)[0].isupper()
    }
    declared = {n for _, _, _, s in _every_setting() for n in s.names}
    declared |= {s.name for s in read_layout(default_config()).variables()}
    assert len(named) > 10
    assert named - declared == set()


# ---- docs/CONFIG.md ------------------------------------------------------------------------
def test_config_md_is_the_generated_table() -> None:
    made = subprocess.run(
        [sys.executable, "-m", "engine", "settings", "--markdown"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert made.returncode == 0, made.stderr
    doc = (ROOT / "docs" / "CONFIG.md").read_text()
    assert doc == made.stdout, "run: python -m engine settings --markdown > docs/CONFIG.md"
    for _, _, _, s in _every_setting():
        assert f"`{s.name}`" in doc
