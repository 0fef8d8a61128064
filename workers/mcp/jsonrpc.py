"""The MCP route's messages as the OpenAPI document describes them: a JSON-RPC 2.0 message
in, a JSON-RPC response (or nothing) out, and its refusals, beside the http trigger's own
error shape (bearer, Origin, size, content type)."""

from __future__ import annotations

from typing import Any

from triggers.http.openapi import ERROR_SCHEMA

_ID = {"type": ["string", "integer"]}
_VERSION = {"type": "string", "const": "2.0"}
_ERROR = {
    "type": "object",
    "properties": {
        "code": {"type": "integer"},
        "message": {"type": "string"},
        "data": {},
    },
    "required": ["code", "message"],
}

MESSAGE: dict[str, Any] = {
    "description": "One JSON-RPC 2.0 message: a request (`method` and `id`: `initialize`, "
    "`tools/list`, `tools/call`, `resources/read`, `prompts/get` …), a notification (`method` "
    "without `id`) or a response (`id` with `result` or `error`).",
    "type": "object",
    "properties": {
        "jsonrpc": _VERSION,
        "id": _ID,
        "method": {"type": "string"},
        "params": {"type": ["object", "null"]},
        "result": {"type": "object"},
        "error": _ERROR,
    },
    "required": ["jsonrpc"],
    "anyOf": [
        {"required": ["method"]},
        {"required": ["id", "result"]},
        {"required": ["id", "error"]},
    ],
}


def malformed(doc: Any) -> str:
    """Why `doc` is not a MESSAGE ("" when it is one): the check the schema above states,
    made before the transport reads it, so what is served is what is documented."""
    if not isinstance(doc, dict):
        return "a message is one JSON object (batches are not served)"
    if doc.get("jsonrpc") != "2.0":
        return '`jsonrpc` must be "2.0"'
    if "id" in doc and (isinstance(doc["id"], bool) or not isinstance(doc["id"], str | int)):
        return "`id` must be a string or an integer"
    if "method" in doc and not isinstance(doc["method"], str):
        return "`method` must be a string"
    if doc.get("params") is not None and not isinstance(doc["params"], dict):
        return "`params` must be an object"
    if "result" in doc and not isinstance(doc["result"], dict):
        return "`result` must be an object"
    if "error" in doc and not _is_error(doc["error"]):
        return "`error` must be an object with an integer `code` and a string `message`"
    if "method" not in doc and not ("id" in doc and ("result" in doc or "error" in doc)):
        return "a message has a `method`, or an `id` with a `result` or an `error`"
    return ""


def _is_error(err: Any) -> bool:
    return (
        isinstance(err, dict)
        and isinstance(err.get("code"), int)
        and not isinstance(err.get("code"), bool)
        and isinstance(err.get("message"), str)
    )


ERROR_MESSAGE: dict[str, Any] = {
    "title": "JSON-RPC error",
    "type": "object",
    "properties": {
        "jsonrpc": _VERSION,
        "id": {"type": ["string", "integer", "null"]},
        "error": _ERROR,
    },
    "required": ["jsonrpc", "error"],
}
REPLY: dict[str, Any] = {
    "title": "JSON-RPC response",
    "type": "object",
    "properties": {
        "jsonrpc": _VERSION,
        "id": {"type": ["string", "integer", "null"]},
        "result": {"type": "object"},
        "error": _ERROR,
    },
    "required": ["jsonrpc"],
}

_EMPTY = {"text/plain": {"schema": {"type": "string", "maxLength": 0}}}
_REFUSED = {
    "description": "refused: by the http trigger (its error shape) or by the transport "
    "(a JSON-RPC error: malformed message, unknown session, wrong Host)",
    "content": {"application/json": {"schema": {"oneOf": [ERROR_SCHEMA, ERROR_MESSAGE]}}},
}

POST_RESPONSES: dict[str, Any] = {
    "200": {
        "description": "the response to the request (an `initialize` also sends the "
        "`Mcp-Session-Id` header)",
        "content": {"application/json": {"schema": REPLY}},
    },
    "202": {"description": "a notification or a response, accepted: no body", "content": _EMPTY},
    "4XX": _REFUSED,
    "5XX": _REFUSED,
}
DELETE_RESPONSES: dict[str, Any] = {
    "200": {"description": "the session (`Mcp-Session-Id`) ended", "content": _EMPTY},
    "4XX": _REFUSED,
    "5XX": _REFUSED,
}
