"""KV browser: buckets, keys, one entry with its revision history, edit and delete with
compare-and-set on the revision the operator was looking at. The memory domain's buckets
are read-only here (workers/console/records.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
import nats.js.errors
from nats.js.kv import KeyValue
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine import Bucket, FunctionError
from workers.console import records
from workers.console.hub import hub
from workers.console.web import json_response, query_int, read_json

VALUE_LIMIT = 256 * 1024


def _created(when: Any) -> str:
    # nats-py gives the stored time as a datetime (a watcher's entries) or nothing.
    if isinstance(when, dt.datetime):
        return when.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    return ""


class BucketView(msgspec.Struct, kw_only=True):
    bucket: str
    values: int
    bytes: int
    history: int


class Revision(msgspec.Struct, kw_only=True):
    revision: int
    op: str
    created: str = ""
    """When it was stored, ISO-8601 UTC ("" when the server did not say)."""


class EntryView(msgspec.Struct, kw_only=True):
    bucket: str
    key: str
    revision: int
    value: str
    is_json: bool
    history: list[Revision]
    read_only: str = ""
    """Why the console does not write this bucket ("" when it does)."""
    viewer_url: str = ""
    """The record's page in the viewer, for the memory domain's records."""
    forget_field: str = ""
    """The `mem::forget` field that forgets this record (audited), when one does."""


class PutIn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    value: str
    revision: int = 0
    """The revision being replaced (0: the key must not exist yet)."""
    json: bool = True
    """Refuse a value that is not JSON (engine state is JSON)."""


async def _bucket(request: Request) -> KeyValue:
    name = request.path_params["bucket"]
    try:
        return await hub(request).client.nc.jetstream().key_value(name)
    except nats.js.errors.BucketNotFoundError:
        raise FunctionError("NOT_FOUND", f"no KV bucket {name!r}") from None
    except nats.js.errors.Error as exc:
        raise FunctionError("BAD_REQUEST", f"bad bucket {name!r}: {exc}", field="bucket") from None


async def buckets(request: Request) -> Response:
    js = hub(request).client.nc.jetstream()
    out = [
        BucketView(
            bucket=s.config.name[3:],
            values=s.state.messages,
            bytes=s.state.bytes,
            history=s.config.max_msgs_per_subject or 1,
        )
        for s in await js.streams_info()
        if s.config.name and s.config.name.startswith("KV_")
    ]
    out.sort(key=lambda b: b.bucket)
    return json_response({"buckets": out})


async def keys(request: Request) -> Response:
    kv = await _bucket(request)
    limit = query_int(request, "limit", 1000, 1, 10000)
    prefix = request.query_params.get("prefix", "")
    found = await Bucket(kv, request.path_params["bucket"], hub(request).client.connection).keys(
        prefix
    )
    found.sort()
    return json_response({"keys": found[:limit], "total": len(found)})


def _key(request: Request) -> str:
    return str(request.path_params["key"])


async def entry(request: Request) -> Response:
    kv = await _bucket(request)
    key = _key(request)
    try:
        e = await kv.get(key)
    except nats.js.errors.KeyNotFoundError:
        raise FunctionError("NOT_FOUND", f"no key {key!r}") from None
    except nats.js.errors.Error as exc:
        raise FunctionError("BAD_REQUEST", f"bad key {key!r}: {exc}", field="key") from None
    if e.operation in ("DEL", "PURGE"):
        raise FunctionError("NOT_FOUND", f"key {key!r} was deleted")
    try:
        hist = await kv.history(key)
    except nats.js.errors.Error:
        hist = []
    data = e.value or b""
    text = data[:VALUE_LIMIT].decode("utf-8", "replace")
    is_json = True
    parsed: Any = None
    try:
        parsed = msgspec.json.decode(data)
        text = msgspec.json.format(msgspec.json.encode(parsed), indent=2).decode()[:VALUE_LIMIT]
    except msgspec.DecodeError:
        is_json = False
    bucket = request.path_params["bucket"]
    settings = hub(request).settings
    guarded = records.guarded(bucket, settings.readonly_buckets)
    path = records.viewer_path(bucket, key, parsed)
    return json_response(
        EntryView(
            bucket=bucket,
            key=key,
            revision=e.revision or 0,
            value=text,
            is_json=is_json,
            history=[
                Revision(
                    revision=h.revision or 0, op=h.operation or "PUT", created=_created(h.created)
                )
                for h in reversed(hist)
            ],
            read_only=records.refusal(bucket) if guarded else "",
            viewer_url=f"http://127.0.0.1:{settings.viewer_port}/{path}" if path else "",
            forget_field=records.FORGET_BY.get(bucket, "") if guarded else "",
        )
    )


def _writable(request: Request) -> None:
    bucket = request.path_params["bucket"]
    if records.guarded(bucket, hub(request).settings.readonly_buckets):
        raise FunctionError("FORBIDDEN", records.refusal(bucket), field="bucket")


async def put(request: Request) -> Response:
    _writable(request)
    kv = await _bucket(request)
    key = _key(request)
    body = await read_json(request, PutIn)
    data = body.value.encode()
    if body.json:
        try:
            data = msgspec.json.encode(msgspec.json.decode(data))
        except msgspec.DecodeError as exc:
            raise FunctionError("BAD_REQUEST", f"value is not JSON: {exc}", field="value") from None
    try:
        if body.revision == 0:
            rev = await kv.create(key, data)
        else:
            rev = await kv.update(key, data, last=body.revision)
    except nats.js.errors.KeyWrongLastSequenceError:
        raise FunctionError(
            "CONFLICT",
            f"{key!r} is no longer at revision {body.revision}; reload it and edit again",
            field="revision",
        ) from None
    except nats.js.errors.Error as exc:
        raise FunctionError("BAD_REQUEST", f"bad key {key!r}: {exc}", field="key") from None
    return json_response({"key": key, "revision": rev})


async def delete(request: Request) -> Response:
    _writable(request)
    kv = await _bucket(request)
    key = _key(request)
    revision = query_int(request, "revision", 0, 0, 2**63 - 1)
    try:
        await kv.delete(key, last=revision or None)
    except nats.js.errors.KeyWrongLastSequenceError:
        raise FunctionError(
            "CONFLICT", f"{key!r} is no longer at revision {revision}", field="revision"
        ) from None
    except nats.js.errors.Error as exc:
        raise FunctionError("BAD_REQUEST", f"bad key {key!r}: {exc}", field="key") from None
    return json_response({"key": key, "deleted": True})


routes = [
    Route("/api/kv", buckets),
    Route("/api/kv/{bucket}", keys),
    Route("/api/kv/{bucket}/{key:path}", entry, methods=["GET"]),
    Route("/api/kv/{bucket}/{key:path}", put, methods=["PUT"]),
    Route("/api/kv/{bucket}/{key:path}", delete, methods=["DELETE"]),
]
