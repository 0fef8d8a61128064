"""The fallback dedup key (no eventId): only a replay of the same event is a duplicate.

The upstream hooks send no eventId, so the key is all that tells a retry from a new event:
two prompts, two `stop` responses or two notifications of one session that share a
timestamp must be two observations.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Client
from functions.kernel.scrub import scrub_value
from functions.memory.observe import build
from functions.memory.wire import ObserveIn
from tests.fixtures import stored_ids
from tests.memory.test_observe import observe

# Plain words: values that scrubbing leaves alone, so "differ" means differ as stored.
_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 .-", min_size=0, max_size=24)
_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), _words)
_json = st.recursive(
    _json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_words, inner, max_size=3)
    ),
    max_leaves=6,
)
_field = st.sampled_from(
    [
        "prompt",
        "assistant_response",
        "error",
        "tool_name",
        "tool_input",
        "tool_output",
        "message",
        "title",
        "notification_type",
        "agent_id",
        "last_message",
        "task_id",
        "image_data",
    ]
)
_data = st.dictionaries(_field, _json, max_size=5)
_hook = st.sampled_from(
    ["prompt_submit", "post_tool_use", "post_tool_failure", "stop", "notification"]
)


def _event(hook: str, data: dict[str, Any], **over: Any) -> dict[str, Any]:
    e: dict[str, Any] = {
        "hookType": hook,
        "sessionId": "s-dedup",
        "project": "demo",
        "cwd": "/work/demo",
        "timestamp": "2026-11-30T09:00:00.000Z",
        "data": data,
    }
    e.update(over)
    return e


def _id(event: dict[str, Any]) -> str:
    req = msgspec.convert(event, ObserveIn)
    return build(req, req.agent_id)[1].id


@st.composite
def _two_datas(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A `data` and a copy with one field added, removed or changed."""
    a = draw(_data)
    b = copy.deepcopy(a)
    key = draw(_field)
    how = draw(st.sampled_from(["set", "drop"])) if key in b else "set"
    if how == "drop":
        del b[key]
    else:
        b[key] = draw(_json.filter(lambda v: key not in a or v != a[key]))
    return a, b


@pytest.mark.unit
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hook=_hook, pair=_two_datas())
def test_events_differing_in_any_data_field_get_two_ids(
    hook: str, pair: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    a, b = pair
    if scrub_value(a) == scrub_value(b):  # the same event once secrets are out
        return
    assert _id(_event(hook, a)) != _id(_event(hook, b))


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(hook=_hook, data=_data)
def test_the_same_event_twice_gets_one_id(hook: str, data: dict[str, Any]) -> None:
    assert _id(_event(hook, data)) == _id(_event(hook, copy.deepcopy(data)))


@pytest.mark.unit
def test_every_field_of_the_event_is_in_the_key() -> None:
    base = _event("prompt_submit", {"prompt": "hello"})
    ids = {_id(base)}
    for field, value in [
        ("sessionId", "other"),
        ("project", "other"),
        ("cwd", "/elsewhere"),
        ("timestamp", "2026-11-30T09:00:00.001Z"),
        ("agentId", "codex"),
        ("hookType", "notification"),
    ]:
        ids.add(_id({**base, field: value}))
    assert len(ids) == 7


@pytest.mark.unit
def test_tool_events_keep_their_first_key_so_stored_ids_stay_stable() -> None:
    # The first fallback key (before the whole-event key), for a tool call it covered fully.
    import hashlib

    enc = msgspec.json.Encoder(order="sorted")
    data = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_output": "a\nb"}
    v1 = hashlib.sha256(
        enc.encode(
            [
                "content",
                "s-dedup",
                "post_tool_use",
                "Bash",
                {"command": "ls"},
                "a\nb",
                "2026-11-30T09:00:00.000Z",
            ]
        )
    ).hexdigest()
    assert _id(_event("post_tool_use", data)) == "obs_" + v1[:24]
    # one field more than v1 covered: keyed by the whole event
    assert _id(_event("post_tool_use", {**data, "image_data": "x"})) != "obs_" + v1[:24]


async def test_three_prompts_sharing_a_timestamp_are_three_observations(
    rest: Any,
) -> None:
    """The reproduction: upstream's prompt hook, three prompts, one timestamp, no eventId."""
    ids, codes = [], []
    for n in (1, 2, 3):
        r = await rest.post(
            "/agentmemory/observe",
            json=_event("prompt_submit", {"prompt": f"hello world {n}"}, sessionId="s-three"),
        )
        codes.append(r.status_code)
        ids.append(r.json()["observationId"])
    assert codes == [201, 201, 201]
    assert len(set(ids)) == 3
    got = await rest.get("/agentmemory/observations", params={"sessionId": "s-three"})
    assert sorted(o["id"] for o in got.json()["observations"]) == sorted(ids)
    again = await rest.post(
        "/agentmemory/observe",
        json=_event("prompt_submit", {"prompt": "hello world 2"}, sessionId="s-three"),
    )
    assert (again.status_code, again.json()["observationId"]) == (200, ids[1])


async def test_generated_events_are_stored_once_each_by_the_worker(
    client: Client, memory_worker: Any
) -> None:
    """The property against real storage: generated pairs of events one field of `data`
    apart, each sent twice; distinct events are stored once each, replays not at all."""
    memory_worker()
    pairs: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    @settings(max_examples=30, deadline=None, database=None)
    @given(hook=_hook, pair=_two_datas())
    def collect(hook: str, pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
        if scrub_value(pair[0]) != scrub_value(pair[1]):
            pairs.append((hook, *pair))

    collect()
    assert len(pairs) >= 10
    expected: set[str] = set()
    for n, (hook, a, b) in enumerate(pairs):
        session = f"s-gen-{n}"
        outs = [await observe(client, _event(hook, d, sessionId=session)) for d in (a, b, a, b)]
        assert [o.status for o in outs] == ["accepted", "accepted", "duplicate", "duplicate"]
        assert outs[0].observation_id == outs[2].observation_id
        assert outs[1].observation_id == outs[3].observation_id
        expected |= {outs[0].observation_id, outs[1].observation_id}
    assert await stored_ids(client) == sorted(expected)
