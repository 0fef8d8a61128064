"""JSON in and out of the console API: typed bodies, and errors that name the field."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from engine import FunctionError, invalid_request

T = TypeVar("T")

MAX_BODY = 1 << 20


def json_response(value: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(value), status_code=status, media_type="application/json")


def error_response(err: FunctionError) -> Response:
    return json_response({"error": err.to_dict()}, err.status)


async def read_json(request: Request, type_: type[T]) -> T:
    body = await request.body()
    if len(body) > MAX_BODY:
        raise FunctionError("TOO_LARGE", f"request body over {MAX_BODY} bytes")
    try:
        return msgspec.json.decode(body or b"{}", type=type_)
    except msgspec.DecodeError as exc:
        raise invalid_request(exc) from None


def query_int(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise FunctionError("BAD_REQUEST", f"{name} must be an integer", field=name) from None
    if not lo <= value <= hi:
        raise FunctionError("BAD_REQUEST", f"{name} must be {lo}..{hi}", field=name)
    return value


def query_float(request: Request, name: str, default: float) -> float:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise FunctionError("BAD_REQUEST", f"{name} must be a number", field=name) from None
    if value < 0:
        raise FunctionError("BAD_REQUEST", f"{name} must be >= 0", field=name)
    return value
