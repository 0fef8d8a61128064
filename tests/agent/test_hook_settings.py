"""The hooks' settings (standard library only, workers/hooks/_settings.py) read every
spelling as engine.settings does, declare what engine.settings' area for them lists, and
never stop the agent over a value they cannot read."""

from __future__ import annotations

import pytest

from engine import settings
from engine.settings import FALSE, TRUE, SettingsError
from workers.hooks import _settings as hook
from workers.hooks.declared import HookSettings

pytestmark = pytest.mark.unit

SPELLINGS = [
    *TRUE,
    *FALSE,
    "TRUE",
    "Yes",
    " on ",
    "Off\t",
    "NO",
    "",
    "maybe",
    "2",
    "y",
    "enable",
]


def test_the_hooks_know_the_engines_spellings() -> None:
    assert (hook.TRUE, hook.FALSE) == (TRUE, FALSE)


@pytest.mark.parametrize("raw", SPELLINGS)
def test_a_spelling_means_in_a_hook_what_it_means_to_the_engine(raw: str) -> None:
    engine_side = settings.Setting(("X",), "bool", None, "")
    if not raw.strip():
        assert engine_side.read({"X": raw}) is None
        return
    try:
        expected: bool | None = engine_side.parse(raw)
    except SettingsError:
        expected = None
    assert hook.flag(raw) is expected


@pytest.mark.parametrize("name", [d[0] for d in hook.DECLARED if d[1] == "bool"])
def test_each_hook_boolean_turns_one_setting_on_and_off(name: str) -> None:
    for yes, no in zip(TRUE, FALSE, strict=True):
        on, off = vars(hook.Settings({name: yes})), vars(hook.Settings({name: no}))
        changed = [k for k in on if on[k] != off[k]]
        assert len(changed) == 1 and on[changed[0]] is True and off[changed[0]] is False


def test_a_value_a_hook_cannot_read_takes_the_default_and_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    s = hook.Settings(
        {"AGENTMEMORY_INJECT_CONTEXT": "maybe", "AGENTMEMORY_HOOK_TIMEOUT_MS": "soon"}
    )
    assert s.inject is False and s.timeout == 0.8
    err = capsys.readouterr().err
    assert "AGENTMEMORY_INJECT_CONTEXT='maybe' is not valid" in err
    assert "AGENTMEMORY_HOOK_TIMEOUT_MS='soon'" in err


def test_the_area_lists_every_variable_a_hook_reads() -> None:
    declared = [s.name for s in settings.settings_of(HookSettings)]
    assert declared == [d[0] for d in hook.DECLARED]
    assert "hooks" in settings.areas()
    # where the engine runs, a malformed hook setting stops the start like any other
    with pytest.raises(SettingsError, match="AGENTMEMORY_HOOKS_DISABLED"):
        settings.load(HookSettings, {"AGENTMEMORY_HOOKS_DISABLED": "perhaps"})
    # and every variable the hook's Settings reads is one of them
    source = hook.Settings.__init__.__code__.co_consts
    read = {c for c in source if isinstance(c, str) and c.startswith("AGENTMEMORY_")}
    assert read == set(declared)
