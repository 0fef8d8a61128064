"""An OpenAPI 3.1 document built from the registered routes and the functions' own
declarations (their request/response types, read from `$SRV.INFO` by `engine.discover`).

A "body" route's request object is documented where it comes from: a JSON request body,
query parameters, or both (`merge`); path parameters are always path parameters."""

from __future__ import annotations

import json
import re
from typing import Any

from engine import FunctionInfo
from triggers.http.routes import Route

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "retryable": {"type": "boolean"},
                "field": {"type": "string"},
            },
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}
UNAUTHORIZED_SCHEMA = ERROR_SCHEMA


def _hoist(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """msgspec schemas keep named types under `$defs`; OpenAPI wants them in components,
    one namespace for every worker's types: a name already taken by another shape is
    renamed (`Name2` …) in this schema, never overwritten (a route would then document
    another route's type)."""
    own: dict[str, Any] = dict(schema.get("$defs") or {})
    rename: dict[str, str] = {}
    for name, body in own.items():
        target, n = name, 1
        while target in defs and defs[target] != _renamed(body, rename):
            n += 1
            target = f"{name}{n}"
        rename[name] = target
    text = json.dumps({k: v for k, v in schema.items() if k != "$defs"})
    moved: dict[str, Any] = json.loads(_refs(text, rename))
    for name, body in own.items():
        defs[rename[name]] = json.loads(_refs(json.dumps(body), rename))
    return moved


def _refs(text: str, rename: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        return f'"#/components/schemas/{rename.get(m.group(1), m.group(1))}"'

    return re.sub(r'"#/\$defs/([^"]+)"', sub, text)


def _renamed(body: Any, rename: dict[str, str]) -> Any:
    return json.loads(_refs(json.dumps(body), rename))


def _object_of(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object schema behind a msgspec schema's top-level `$ref`."""
    if not schema:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = (schema.get("$defs") or {}).get(ref.removeprefix("#/$defs/"))
        return target if isinstance(target, dict) else None
    return schema if schema.get("type") == "object" else None


def _query_parameters(
    request: dict[str, Any] | None, skip: set[str], defs: dict[str, Any]
) -> list[dict[str, Any]]:
    obj = _object_of(request)
    if obj is None:
        return []
    required = set(obj.get("required") or [])
    out = []
    for name, prop in (obj.get("properties") or {}).items():
        if name in skip:
            continue
        schema = _hoist({**prop, "$defs": request.get("$defs", {})} if request else prop, defs)
        out.append({"name": name, "in": "query", "required": name in required, "schema": schema})
    return out


def _operation(
    r: Route, fn: FunctionInfo | None, defs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    cfg = r.config
    body_schema, response_schema = cfg.body_schema, cfg.response_schema
    if cfg.mode == "body" and fn is not None:
        body_schema = body_schema if body_schema is not None else fn.request_schema
        response_schema = response_schema if response_schema is not None else fn.response_schema
    op: dict[str, Any] = {"operationId": r.function_id, "x-function": r.function_id}
    summary = cfg.summary or (fn.description if fn else "")
    if summary:
        op["summary"] = summary
    if cfg.description:
        op["description"] = cfg.description
    if cfg.tags:
        op["tags"] = cfg.tags
    params: list[dict[str, Any]] = [
        {"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in r.params
    ]
    source = cfg.source if cfg.mode == "body" else "body"
    if source in ("query", "merge"):
        params += _query_parameters(body_schema, set(r.params), defs)
    if params:
        op["parameters"] = params
    if body_schema is not None and source in ("body", "merge"):
        obj = _object_of(body_schema)
        # An empty body is `{}`: required when `{}` would not do (a required field, or a
        # one-of requirement beside the type).
        required = (
            obj is None
            or bool(obj.get("required"))
            or any(k in body_schema for k in ("anyOf", "oneOf", "allOf"))
        )
        op["requestBody"] = {
            "required": required and source == "body",
            "content": {"application/json": {"schema": _hoist(body_schema, defs)}},
        }
    ok: dict[str, Any] = {"description": "success"}
    if response_schema is not None:
        ok["content"] = {"application/json": {"schema": _hoist(response_schema, defs)}}
    err = {"description": "error", "content": {"application/json": {"schema": ERROR_SCHEMA}}}
    statuses = {str(cfg.status)}
    statuses.update(str(s) for s in cfg.status_by.values())
    op["responses"] = {s: ok for s in sorted(statuses)}
    op["responses"].update({"4XX": err, "5XX": err})
    if cfg.responses is not None:
        op["responses"] = dict(cfg.responses)
    if r.requires_bearer:
        op["security"] = [{"bearer": []}]
        op["responses"]["401"] = {
            "description": "missing or wrong bearer secret",
            "content": {"application/json": {"schema": UNAUTHORIZED_SCHEMA}},
        }
    return op, ok


def build_openapi(
    routes: list[Route], title: str, functions: dict[str, FunctionInfo] | None = None
) -> dict[str, Any]:
    functions = functions or {}
    paths: dict[str, dict[str, Any]] = {}
    defs: dict[str, Any] = {}
    alternates: list[Route] = []
    successes: dict[tuple[str, str], dict[str, Any]] = {}
    for r in routes:
        if r.config.accept:
            alternates.append(r)
            continue
        op, ok = _operation(r, functions.get(r.function_id), defs)
        path = r.config.path.replace(":path}", "}").replace(":int}", "}")
        paths.setdefault(path, {})[r.config.method.lower()] = op
        if ok is not None:
            successes[(r.config.method, path)] = ok
    # A route answering another media type (an HTML page) is another content of the same
    # operation's success response.
    for r in alternates:
        path = r.config.path.replace(":path}", "}").replace(":int}", "}")
        ok = successes.get((r.config.method, path))
        if ok is not None:
            ok.setdefault("content", {})[r.config.accept] = {"schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1"},
        "paths": paths,
        "components": {
            "schemas": defs,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
