"""A request body nested deeper than MAX_JSON_DEPTH is refused with 400 naming the limit,
on every route (5,000 levels used to reach the decoder's RecursionError: a 500); a body just
inside the limit is judged on its content as usual."""

from __future__ import annotations

import httpx
import pytest

from engine.protocol import MAX_JSON_DEPTH, maybe_too_deep, too_deep

A = "/agentmemory/"


def nested(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 5000])
async def test_deep_json_is_400_naming_the_limit(rest: httpx.AsyncClient, levels: int) -> None:
    observe = (
        '{"hookType":"post_tool_use","sessionId":"s1","project":"p","cwd":"/w",'
        '"timestamp":"2026-01-01T00:00:00Z","data":' + nested(levels) + "}"
    )
    remember = '{"content":"deep","files":[' + "[" * levels + "]" * levels + "]}"
    for path, body in (("observe", observe), ("remember", remember)):
        r = await rest.post(A + path, content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert f"deeper than {MAX_JSON_DEPTH} levels" in err["message"] and err["field"] == "body"


async def test_nesting_inside_the_limit_is_accepted(rest: httpx.AsyncClient) -> None:
    r = await rest.post(
        A + "observe",
        content='{"hookType":"post_tool_use","sessionId":"s1","project":"p","cwd":"/w",'
        '"timestamp":"2026-01-01T00:00:00Z","data":{"tool_name":"Edit","tool_input":'
        + nested(MAX_JSON_DEPTH - 3)
        + "}}",
        headers={"content-type": "application/json"},
    )
    assert r.status_code in (200, 201), r.text


@pytest.mark.unit
def test_depth_checks() -> None:
    assert not maybe_too_deep(b'{"a": [1, 2, {"b": 3}]}')
    assert too_deep([[[[]]]], limit=3) and not too_deep([[[]]], limit=3)
    assert not too_deep({"a": "[[[[[[["}, limit=1)  # brackets in strings are text
