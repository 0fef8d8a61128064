"""Property test against our own OpenAPI document (hypothesis, with a small generator of
values from the JSON schemas the document declares):
every memory route, fed bodies generated from its request schema and arbitrary JSON, never
answers 5xx, and every reply matches the declared response (or error) schema."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.memory.conftest import AUTH

EXAMPLES = 12
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_query = st.dictionaries(
    st.sampled_from(["limit", "offset", "sessionId", "project", "agentId", "maxSessions"]),
    st.one_of(st.integers(-5, 20_000).map(str), st.text(max_size=6)),
    max_size=3,
)
ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}


def from_schema(schema: dict[str, Any], components: dict[str, Any], depth: int = 0) -> Any:
    """Values that (mostly) satisfy `schema`: enough to get past validation and reach the
    handlers, which is where a 500 would hide."""
    if "$ref" in schema:
        return from_schema(components[schema["$ref"].rsplit("/", 1)[-1]], components, depth)
    if "anyOf" in schema:
        return st.one_of([from_schema(s, components, depth) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if depth > 3:
        return st.none()
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        fixed = {
            k: from_schema(v, components, depth + 1) for k, v in props.items() if k in required
        }
        optional = {
            k: from_schema(v, components, depth + 1) for k, v in props.items() if k not in required
        }
        if not props:
            return st.dictionaries(st.text(max_size=8), _json, max_size=3)
        return st.fixed_dictionaries(fixed, optional=optional)
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {}), components, depth + 1), max_size=3)
    if kind == "string":
        return st.one_of(
            st.text(min_size=schema.get("minLength", 0), max_size=30),
            st.sampled_from(["2026-11-29T10:00:00Z", "sk-ant-api03-" + "x" * 30, "a/b.py"]),
        )
    if kind == "integer":
        return st.integers(schema.get("minimum", -10), schema.get("maximum", 10_000))
    if kind == "number":
        return st.floats(
            min_value=schema.get("minimum", schema.get("exclusiveMinimum", -10.0)),
            max_value=1e6,
            allow_nan=False,
            exclude_min="exclusiveMinimum" in schema,
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _json


def _rooted(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "components": {"schemas": components}}


def _check(r: httpx.Response, op: dict[str, Any], components: dict[str, Any]) -> None:
    assert r.status_code < 500, (
        f"{r.request.method} {r.request.url} -> {r.status_code} {r.text[:300]}"
    )
    if r.status_code >= 400:
        jsonschema.validate(r.json(), ERROR)
        return
    if "html" in r.headers.get("content-type", ""):
        return
    declared = op["responses"].get(str(r.status_code)) or op["responses"].get(
        next(iter(k for k in op["responses"] if k.startswith("2")), "")
    )
    schema = (declared or {}).get("content", {}).get("application/json", {}).get("schema")
    if schema is not None:
        jsonschema.validate(r.json(), _rooted(schema, components))


async def test_memory_routes_never_500_and_replies_match_the_openapi_schema(
    rest: httpx.AsyncClient,
) -> None:
    doc = (await rest.get("/agentmemory/openapi.json")).json()
    components = doc["components"]["schemas"]
    ops = [
        (path, method.upper(), op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if "memory" in op.get("tags", [])
    ]
    assert len(ops) >= 18
    with httpx.Client(base_url=str(rest.base_url), headers=AUTH, timeout=15) as c:
        for path, method, op in ops:
            _fuzz(c, path, method, op, components)()


_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)


def _fuzz(
    c: httpx.Client, path: str, method: str, op: dict[str, Any], components: dict[str, Any]
) -> Any:
    content = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    body_schema = content.get("schema")
    if body_schema is not None:

        @_SETTINGS
        @given(from_schema(body_schema, components) | _json)
        def send_body(body: Any) -> None:
            _check(c.request(method, path, json=body), op, components)

        return send_body

    @_SETTINGS
    @given(_query, st.text(alphabet="abcdef_0123456789", min_size=1, max_size=12))
    def send_query(query: dict[str, str], ident: str) -> None:
        _check(c.request(method, path.replace("{id}", ident), params=query), op, components)

    return send_query
