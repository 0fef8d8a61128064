"""engine.settings: one parser per type, older names behind the new, bounds and choices,
values read once per distinct environment, and the worker identity the supervisor writes
read back as it was written."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine import settings
from engine.settings import (
    SettingsError,
    WorkerIdentity,
    choice,
    duration,
    flag,
    integer,
    items,
    load,
    number,
    path,
    size,
    text,
)

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Inner:
    deep: bool = flag("PROBE_DEEP", False, "a nested flag")


@dataclass(frozen=True)
class Probe:
    """An area of each kind."""

    on: bool = flag("PROBE_ON", True, "a flag")
    count: int = integer(("PROBE_COUNT", "PROBE_OLD_COUNT"), 3, "newest name first", lo=1, hi=9)
    kept: int = integer("PROBE_KEPT", 5, "clamped", lo=2, hi=8, clamp=True)
    ratio: float = number("PROBE_RATIO", 0.5, "a number")
    wait_ms: int = duration("PROBE_WAIT_MS", 100, "whole milliseconds", unit="milliseconds")
    wait: float = duration("PROBE_WAIT", 1.5, "seconds")
    room: int = size("PROBE_ROOM", 1 << 20, "bytes")
    name: str = text("PROBE_NAME", "x", "text")
    mode: str = choice(
        "PROBE_MODE", "all", ("all", "events", "none"), "enum", synonyms={"s2": "all"}
    )
    where: Path | None = path("PROBE_WHERE", None, "a path")
    tags: tuple[str, ...] = items("PROBE_TAGS", (), "a list")
    kinds: tuple[str, ...] = items("PROBE_KINDS", (), "a closed list", choices=("a", "b"))
    plain: int = 7
    inner: Inner = field(default_factory=Inner)


def test_unset_and_blank_take_the_defaults() -> None:
    assert load(Probe, {}) == Probe()
    assert load(Probe, {"PROBE_COUNT": "  ", "PROBE_NAME": ""}) == Probe()


def test_each_kind_reads_its_values() -> None:
    got = load(
        Probe,
        {
            "PROBE_ON": " NO ",
            "PROBE_COUNT": "+9",
            "PROBE_RATIO": "1e-3",
            "PROBE_WAIT_MS": "250",
            "PROBE_WAIT": "0.25",
            "PROBE_ROOM": "64M",
            "PROBE_NAME": "  spaced out ",
            "PROBE_MODE": "S2",
            "PROBE_WHERE": "~/x",
            "PROBE_TAGS": " a, ,b ,",
            "PROBE_KINDS": "A,b",
            "PROBE_DEEP": "on",
        },
    )
    assert got == Probe(
        on=False,
        count=9,
        ratio=0.001,
        wait_ms=250,
        wait=0.25,
        room=64 << 20,
        name="spaced out",
        mode="all",
        where=Path.home() / "x",
        tags=("a", "b"),
        kinds=("a", "b"),
        inner=Inner(deep=True),
    )
    assert isinstance(got.wait_ms, int) and isinstance(got.wait, float)


def test_the_first_name_set_wins_and_an_older_one_still_works() -> None:
    assert load(Probe, {"PROBE_OLD_COUNT": "4"}).count == 4
    assert load(Probe, {"PROBE_COUNT": "5", "PROBE_OLD_COUNT": "4"}).count == 5
    with pytest.raises(SettingsError, match="PROBE_OLD_COUNT='x'"):
        load(Probe, {"PROBE_OLD_COUNT": "x"})


def test_bounds_refuse_or_clamp_as_declared() -> None:
    assert load(Probe, {"PROBE_KEPT": "1"}).kept == 2
    assert load(Probe, {"PROBE_KEPT": "99"}).kept == 8
    with pytest.raises(SettingsError, match="a whole number from 1 to 9"):
        load(Probe, {"PROBE_COUNT": "10"})


@pytest.mark.parametrize(
    ("name", "raw", "accepted"),
    [
        ("PROBE_ON", "maybe", "true or false (1/true/yes/on, 0/false/no/off)"),
        ("PROBE_COUNT", "3.5", "a whole number from 1 to 9"),
        ("PROBE_COUNT", "1_000", "a whole number from 1 to 9"),
        ("PROBE_RATIO", "nan", "a number"),
        ("PROBE_WAIT", "-1", "a number of seconds"),
        ("PROBE_WAIT_MS", "30ms", "a number of milliseconds"),
        ("PROBE_ROOM", "lots", "a size (bytes, or 512K, 64M, 1G)"),
        ("PROBE_MODE", "zstd", "one of all, events, none"),
        ("PROBE_KINDS", "a,c", "a comma-separated list, each one of a, b"),
    ],
)
def test_a_malformed_value_names_the_variable_the_value_and_what_is_accepted(
    name: str, raw: str, accepted: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        load(Probe, {name: raw})
    assert str(caught.value) == f"{name}={raw!r} is not valid: expected {accepted}"
    assert (caught.value.name, caught.value.value) == (name, raw)
    assert isinstance(caught.value, ValueError)


def test_the_process_environment_is_read_again_when_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROBE_NAME", "one")
    first = load(Probe)
    assert first.name == "one" and load(Probe) is first  # parsed once for these values
    monkeypatch.setenv("PROBE_NAME", "two")
    assert load(Probe).name == "two"
    monkeypatch.delenv("PROBE_NAME")
    assert load(Probe).name == "x"


def test_the_worker_identity_reads_back_what_the_supervisor_wrote(tmp_path: Path) -> None:
    written = WorkerIdentity(
        nats_url="nats://127.0.0.1:4222",
        credentials=tmp_path / "bus.json",
        replicas=3,
        domain="laptop",
        config=tmp_path / "engine.yaml",
        min_free_disk=1 << 30,
        worker="search",
        replica=2,
        instance=1,
        data_dir=tmp_path,
        boot_id="b00t",
        namespace="probe",
        supervisor_pid=4242,
        lifeline_fd=7,
    )
    env = written.environ()
    assert env["ENGINE_WORKER_NAME"] == "search" and env["ENGINE_WORKER_REPLICA"] == "2"
    assert load(WorkerIdentity, env) == written
    assert "ENGINE_NATS_DOMAIN" not in WorkerIdentity().environ()  # unset: inherited


def test_a_child_environment_is_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_NAME", "parent")
    child = settings.environ(PROBE_NAME="child", PROBE_MORE="1")
    assert child["PROBE_NAME"] == "child" and child["PROBE_MORE"] == "1"
    child["PROBE_NAME"] = "changed"
    assert load(Probe).name == "parent"
    settings.set_default("PROBE_NAME", "ignored")  # set already: kept
    assert load(Probe).name == "parent"
