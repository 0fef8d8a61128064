"""ENGINE_TRIGGERS: which plug-ins a worker hosts in its own process."""

from __future__ import annotations

import pytest

from engine import Worker
from triggers.hosting import ALL, host, hosted_kinds, make_plugin


def test_hosted_kinds_reads_a_comma_list_and_nothing_by_default() -> None:
    assert hosted_kinds(None) == [] and hosted_kinds("") == []
    assert hosted_kinds(" http , cron,") == ["http", "cron"]


def test_an_unknown_kind_is_refused_by_name() -> None:
    worker = Worker("hosting-test")
    with pytest.raises(SystemExit, match=r"'htp'.*expected some of http"):
        host(worker, hosted_kinds("http,htp"))


def test_every_kind_builds_its_plugin() -> None:
    assert {make_plugin(k).kind for k in ALL} == {
        "http",
        "cron",
        "queue",
        "subscribe",
        "stream",
        "state",
        "ws",
    }
