"""Every coordination route, fed bodies and queries generated from its OpenAPI request
schema and arbitrary JSON, never answers 5xx, and every reply matches the document: the
declared success schema, upstream's refusal shape where the route declares it (409 of the
lease routes), else the error schema."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from tests.memory.conftest import AUTH
from tests.memory.test_openapi_fuzz import _SETTINGS, ERROR, _json, _rooted, from_schema


def _check(r: httpx.Response, op: dict[str, Any], components: dict[str, Any]) -> None:
    assert r.status_code < 500, f"{r.request.method} {r.request.url} -> {r.status_code} {r.text}"
    declared = op["responses"].get(str(r.status_code))
    if declared is None and r.status_code < 400:
        declared = next(v for k, v in op["responses"].items() if k.startswith("2"))
    if declared is None:
        jsonschema.validate(r.json(), ERROR)
        return
    schema = declared.get("content", {}).get("application/json", {}).get("schema")
    if schema is not None:
        jsonschema.validate(r.json(), _rooted(schema, components))


_query = st.dictionaries(
    st.sampled_from(
        ["limit", "project", "agentId", "actionId", "status", "runId", "unreadOnly", "type"]
    ),
    st.one_of(st.integers(-5, 2000).map(str), st.text(max_size=6), st.just("true")),
    max_size=3,
)


def _fuzz(
    c: httpx.Client, path: str, method: str, op: dict[str, Any], comps: dict[str, Any]
) -> Any:
    content = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    body_schema = content.get("schema")
    if body_schema is not None:

        @_SETTINGS
        @given(from_schema(body_schema, comps) | _json)
        def send_body(body: Any) -> None:
            _check(c.request(method, path, json=body), op, comps)

        return send_body

    @_SETTINGS
    @given(_query)
    def send_query(query: dict[str, str]) -> None:
        _check(c.request(method, path, params=query), op, comps)

    return send_query


async def test_coordination_routes_never_500_and_match_the_openapi_document(
    rest: httpx.AsyncClient,
) -> None:
    r = await rest.post("/agentmemory/actions", json={"title": "seed", "project": "p"})
    assert r.status_code == 201
    doc = (await rest.get("/agentmemory/openapi.json")).json()
    comps = doc["components"]["schemas"]
    ops = [
        (path, method.upper(), op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if "coordination" in op.get("tags", [])
    ]
    assert len(ops) == 33  # upstream 0.9.29 coordination routes
    with httpx.Client(base_url=str(rest.base_url), headers=AUTH, timeout=15) as c:
        for path, method, op in ops:
            _fuzz(c, path, method, op, comps)()
