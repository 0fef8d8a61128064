"""Every number a request may carry is bounded in its schema (the OpenAPI document states
what the server takes): an unbounded float reached `timedelta` as 7e307 days and answered
500 (crystals/auto, found by schemathesis). Walks the request type of every operation served
over REST or MCP: a float without a maximum fails it (100 years is the usual bound)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from typing import Any

import msgspec
import pytest

import functions

pytestmark = pytest.mark.unit

_ATTR = "__engine_operation__"


def request_types() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mod in pkgutil.walk_packages(functions.__path__, "functions."):
        module = importlib.import_module(mod.name)
        for _, klass in inspect.getmembers(module, inspect.isclass):
            if klass.__module__ != module.__name__:
                continue
            for member in vars(klass).values():
                decl = getattr(member, _ATTR, None)
                if decl is None or (decl.http is None and decl.tool is None):
                    continue  # bus-only steps (stream triggers) carry stored records
                hints = typing.get_type_hints(member, include_extras=True)
                params = [p for p in inspect.signature(member).parameters if p != "self"]
                if params and params[0] in hints and params[0] != "ctx":
                    out[decl.function_id] = hints[params[0]]
    return out


def unbounded(schema: dict[str, Any]) -> list[str]:
    defs = schema.get("$defs", {})
    found: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "number" and not {"maximum", "exclusiveMaximum"} & set(node):
                found.append(where)
            for k, v in node.items():
                if k != "$defs":
                    walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    walk(schema, "")
    for name, body in defs.items():
        walk(body, name)
    return found


def test_every_request_number_has_a_maximum() -> None:
    types = request_types()
    assert len(types) > 100  # the walk found the operations
    bad = {}
    for fid, t in sorted(types.items()):
        holes = unbounded(msgspec.json.schema(t))
        if holes:
            bad[fid] = holes
    assert not bad, bad
