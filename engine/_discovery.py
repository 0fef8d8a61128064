"""What functions the bus serves, read from every worker's `$SRV.INFO` (NATS micro): their
descriptions, request/response schemas, REST routes and MCP tools, as each declared them.
The OpenAPI document, MCP tool lists and the console all read this one source."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import msgspec

from engine._client import Client
from engine._operations import Http, Tool


class FunctionInfo(msgspec.Struct, kw_only=True):
    id: str
    description: str = ""
    request_schema: dict[str, Any] | None = None
    response_schema: dict[str, Any] | None = None
    http: Http | None = None
    tool: Tool | None = None
    workers: list[str] = msgspec.field(default_factory=list)
    """Names of the workers (micro services) that serve it."""
    instances: int = 0
    """How many worker processes answered for it."""


def _json(text: Any) -> Any:
    if not isinstance(text, str) or not text:
        return None
    with contextlib.suppress(ValueError):
        return json.loads(text)
    return None


def _declared(text: Any, type_: Any) -> Any:
    if not isinstance(text, str) or not text:
        return None
    with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError, ValueError):
        return msgspec.json.decode(text, type=type_)
    return None


async def service_infos(
    client: Client, quiet: float = 0.15, limit: float = 1.0, verb: str = "INFO"
) -> list[Any]:
    """Every `$SRV.<verb>` reply (INFO or STATS, JSON objects); stops once none came for
    `quiet` seconds."""
    nc = client.nc
    replies: asyncio.Queue[bytes] = asyncio.Queue()

    async def on_reply(msg: Any) -> None:
        replies.put_nowait(msg.data)

    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, cb=on_reply)
    out: list[Any] = []
    try:
        await nc.publish(f"$SRV.{verb}", b"", reply=inbox)
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while loop.time() < end:
            try:
                data = await asyncio.wait_for(replies.get(), quiet)
            except TimeoutError:
                break
            with contextlib.suppress(ValueError):
                out.append(json.loads(data))
    finally:
        await sub.unsubscribe()
    return out


async def discover(client: Client, quiet: float = 0.15, limit: float = 1.0) -> list[FunctionInfo]:
    """The functions on the bus, one entry per id (replicas merged), sorted by id."""
    found: dict[str, FunctionInfo] = {}
    for info in await service_infos(client, quiet, limit):
        if not isinstance(info, dict):
            continue
        worker = str((info.get("metadata") or {}).get("worker") or info.get("name") or "")
        for ep in info.get("endpoints") or []:
            meta = (ep or {}).get("metadata") or {}
            fid = meta.get("function_id")
            if not fid:
                continue
            fi = found.get(fid)
            if fi is None:
                fi = found[fid] = FunctionInfo(
                    id=fid,
                    description=str(meta.get("description") or ""),
                    request_schema=_json(meta.get("request_schema")),
                    response_schema=_json(meta.get("response_schema")),
                    http=_declared(meta.get("http"), Http),
                    tool=_declared(meta.get("tool"), Tool),
                )
            fi.instances += 1
            if worker and worker not in fi.workers:
                fi.workers.append(worker)
    return [found[k] for k in sorted(found)]
