"""Request/response schemas of functions, read from the workers' `$SRV.INFO` metadata.

Used by the OpenAPI document for `mode="body"` routes declared without `body_schema` /
`response_schema`: the function's own msgspec types are then the route's schemas.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from nats.aio.client import Client as NATS

Schemas = dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]]


def _schema(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str) or not text:
        return None
    with contextlib.suppress(ValueError):
        value = json.loads(text)
        return value if isinstance(value, dict) else None
    return None


async def function_schemas(nc: NATS, quiet: float = 0.15, limit: float = 1.0) -> Schemas:
    """Ask every micro service for its INFO; stop once no reply came for `quiet` seconds."""
    replies: asyncio.Queue[bytes] = asyncio.Queue()

    async def on_reply(msg: Any) -> None:
        replies.put_nowait(msg.data)

    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, cb=on_reply)
    out: Schemas = {}
    try:
        await nc.publish("$SRV.INFO", b"", reply=inbox)
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while loop.time() < end:
            try:
                data = await asyncio.wait_for(replies.get(), quiet)
            except TimeoutError:
                break
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                for ep in json.loads(data).get("endpoints") or []:
                    meta = ep.get("metadata") or {}
                    fid = meta.get("function_id")
                    if fid:
                        out[fid] = (
                            _schema(meta.get("request_schema")),
                            _schema(meta.get("response_schema")),
                        )
    finally:
        await sub.unsubscribe()
    return out
