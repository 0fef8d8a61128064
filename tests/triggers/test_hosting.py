"""ENGINE_TRIGGERS: which plug-ins a worker hosts in its own process."""

from __future__ import annotations

import pytest

from engine import Worker
from engine.triggers import all_kinds, host, hosted_kinds, make_plugin

pytestmark = pytest.mark.unit


def test_hosted_kinds_reads_a_comma_list_and_nothing_by_default() -> None:
    assert hosted_kinds(None) == [] and hosted_kinds("") == []
    assert hosted_kinds(" http , cron,") == ["http", "cron"]


def test_an_unknown_kind_is_refused_by_name() -> None:
    worker = Worker("hosting-test")
    with pytest.raises(SystemExit, match=r"'htp'.*installed plug-ins: cron, http"):
        host(worker, hosted_kinds("http,htp"))


def test_a_declaration_of_an_unknown_kind_is_refused_from_the_same_table() -> None:
    """One list of kinds (the `engine.triggers` entry points): what a worker may declare is
    what a process can host."""
    worker = Worker("hosting-test")
    with pytest.raises(ValueError, match=r"'htpp'.*installed plug-ins: cron, http, queue"):
        worker.trigger("htpp", "greet::hello", path="/x")
    assert all_kinds() == sorted(all_kinds()) and "ws" in all_kinds()


def test_every_kind_builds_its_plugin() -> None:
    assert {make_plugin(k).kind for k in all_kinds()} == {
        "http",
        "cron",
        "queue",
        "subscribe",
        "stream",
        "state",
        "ws",
    }
