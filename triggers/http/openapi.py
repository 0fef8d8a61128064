"""An OpenAPI 3.1 document built from the registered routes and their declared schemas."""

from __future__ import annotations

import json
from typing import Any

from triggers.http.routes import Route
from triggers.http.schemas import Schemas

_ERROR = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "field": {"type": "string"},
            },
            "required": ["code", "message"],
        }
    },
}


def _hoist(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """msgspec schemas keep named types under `$defs`; OpenAPI wants them in components."""
    text = json.dumps(schema).replace('"#/$defs/', '"#/components/schemas/')
    moved: dict[str, Any] = json.loads(text)
    defs.update(moved.pop("$defs", {}))
    return moved


def build_openapi(
    routes: list[Route], title: str, functions: Schemas | None = None
) -> dict[str, Any]:
    """`functions` (from `$SRV.INFO`) fills the schemas of `mode="body"` routes that
    declared none: there the function's own request/response types are the route's."""
    paths: dict[str, dict[str, Any]] = {}
    defs: dict[str, Any] = {}
    for r in routes:
        cfg = r.config
        body_schema, response_schema = cfg.body_schema, cfg.response_schema
        if cfg.mode == "body" and functions and r.function_id in functions:
            req_s, resp_s = functions[r.function_id]
            body_schema = body_schema if body_schema is not None else req_s
            response_schema = response_schema if response_schema is not None else resp_s
        op: dict[str, Any] = {"operationId": r.function_id, "x-function": r.function_id}
        if cfg.summary:
            op["summary"] = cfg.summary
        if cfg.description:
            op["description"] = cfg.description
        if cfg.tags:
            op["tags"] = cfg.tags
        if r.params:
            op["parameters"] = [
                {"name": p, "in": "path", "required": True, "schema": {"type": "string"}}
                for p in r.params
            ]
        if body_schema is not None:
            op["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": _hoist(body_schema, defs)}},
            }
        ok: dict[str, Any] = {"description": "success"}
        if response_schema is not None:
            ok["content"] = {"application/json": {"schema": _hoist(response_schema, defs)}}
        err = {"description": "error", "content": {"application/json": {"schema": _ERROR}}}
        op["responses"] = {str(cfg.status): ok, "4XX": err, "5XX": err}
        if r.requires_bearer:
            op["security"] = [{"bearer": []}]
        path = cfg.path.replace(":path}", "}").replace(":int}", "}")
        paths.setdefault(path, {})[cfg.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1"},
        "paths": paths,
        "components": {
            "schemas": defs,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
