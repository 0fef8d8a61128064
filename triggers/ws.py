"""The WebSocket gateway (port 3112): an authenticated client follows a subject or a stream.

    ws://127.0.0.1:3112/ws?subject=topic.news            core subject, live only
    ws://127.0.0.1:3112/ws?stream=MEM_EVENTS&from=new     stream: from=new (default) | all | <seq>
                                                          optional &subject=<filter>

Auth: `Authorization: Bearer <secret>` or `?token=<secret>` (browsers cannot set headers on
a WebSocket); an `Origin` outside loopback and `VIEWER_ALLOWED_ORIGINS` is refused. Each
message arrives as one text frame `{"subject", "seq"?, "data"}` (data as JSON when it is
JSON, else a string). A client that reads too slowly is disconnected (close code 1013)
rather than buffering without bound. Port from `AGENTMEMORY_STREAMS_PORT`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import msgspec
import uvicorn
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from engine import Client, TriggerSpec, Worker
from engine.paths import Instance, current_layout
from triggers.http.secret import bearer_matches
from triggers.http.settings import HttpSettings
from triggers.serving import QuietServer, listen_socket, serve_in_background

log = logging.getLogger("triggers.ws")

QUEUE_LIMIT = 1000
_any = msgspec.json.Decoder()


class Frame(msgspec.Struct, omit_defaults=True):
    subject: str
    data: msgspec.Raw
    seq: int = 0


def frame(msg: Msg) -> bytes:
    data = msg.data or b"null"
    try:
        _any.decode(data)
    except msgspec.DecodeError:
        data = msgspec.json.encode(data.decode("utf-8", "replace"))
    seq = 0
    if msg.reply and msg.reply.startswith("$JS.ACK."):
        seq = msg.metadata.sequence.stream
    return msgspec.json.encode(Frame(msg.subject, msgspec.Raw(data), seq))


class StreamGateway:
    kind = "ws"

    def __init__(self, settings: HttpSettings | None = None, port: int | None = None) -> None:
        self.settings = settings
        self.port = port
        self._client: Client | None = None
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None

    def install(self, worker: Worker) -> None:
        pass

    async def apply(self, spec: TriggerSpec) -> None:
        pass

    async def remove(self, key: str) -> None:
        pass

    async def start(self, client: Client) -> None:
        self._client = client
        settings = self.settings = self.settings or HttpSettings.from_env()
        given = current_layout().given_port("streams")
        port = self.port or given or Instance.resolve().ports.streams
        app = Starlette(routes=[WebSocketRoute("/ws", self._follow)])
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=port,
            loop="none",
            lifespan="off",
            access_log=False,
            log_level="warning",
            ws="websockets-sansio",
            date_header=False,  # uvicorn's legacy "websockets" one is deprecated
        )
        self._server = QuietServer(config)
        self._task = await serve_in_background(self._server, listen_socket(settings.host, port))
        log.info("websocket gateway on %s:%d", settings.host, port)

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.request_exit()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)

    def _allowed(self, ws: WebSocket) -> bool:
        assert self.settings is not None
        origin = ws.headers.get("origin")
        if origin is not None and not self.settings.origin_allowed(origin):
            return False
        header = ws.headers.get("authorization")
        token = ws.query_params.get("token")
        if token is not None:
            header = f"Bearer {token}"
        return bearer_matches(header, self.settings.secret)

    async def _follow(self, ws: WebSocket) -> None:
        if not self._allowed(ws):
            await ws.close(code=1008, reason="unauthorized")
            return
        q: asyncio.Queue[bytes] = asyncio.Queue(QUEUE_LIMIT)
        overflow = asyncio.Event()

        async def on_msg(msg: Msg) -> None:
            if overflow.is_set():
                return
            try:
                q.put_nowait(frame(msg))
            except asyncio.QueueFull:
                overflow.set()

        try:
            sub = await self._subscribe(ws, on_msg)
        except ValueError as exc:
            await ws.accept()
            await ws.close(code=1008, reason=str(exc)[:120])
            return
        await ws.accept()
        reader = asyncio.create_task(_wait_closed(ws))
        slow = asyncio.create_task(overflow.wait())
        try:
            while True:
                getter = asyncio.create_task(q.get())
                done, _ = await asyncio.wait(
                    {getter, reader, slow}, return_when=asyncio.FIRST_COMPLETED
                )
                if getter not in done:
                    getter.cancel()
                    if slow in done:
                        await ws.close(code=1013, reason="client too slow")
                    return
                await ws.send_text(getter.result().decode())
        except (WebSocketDisconnect, RuntimeError):
            return
        finally:
            reader.cancel()
            slow.cancel()
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _subscribe(self, ws: WebSocket, cb: Any) -> Any:
        assert self._client is not None
        nc = self._client.nc
        params = ws.query_params
        subject = params.get("subject", "")
        stream = params.get("stream", "")
        if not stream:
            if not subject:
                raise ValueError("give ?subject= or ?stream=")
            sub = await nc.subscribe(subject, cb=cb)
            # The server has the subscription before the client is accepted: a message
            # published once the socket opens is never missed (a SUB still in our write
            # buffer would miss it: the live-follow test failed so under load).
            await nc.flush()
            return sub
        js = nc.jetstream()
        try:
            info = await js.stream_info(stream)
        except Exception:
            raise ValueError(f"no stream {stream}") from None
        if not subject:
            subjects = info.config.subjects or []
            if len(subjects) != 1:
                raise ValueError("this stream has several subjects: give ?subject=")
            subject = subjects[0]
        start = params.get("from", "new")
        opts: dict[str, Any] = {"deliver_policy": DeliverPolicy.NEW}
        if start == "all":
            opts = {"deliver_policy": DeliverPolicy.ALL}
        elif start.isdigit():
            opts = {"deliver_policy": DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": int(start)}
        return await js.subscribe(
            subject, stream=stream, cb=cb, ordered_consumer=True, config=ConsumerConfig(**opts)
        )


async def _wait_closed(ws: WebSocket) -> None:
    with contextlib.suppress(Exception):
        while True:
            msg = await ws.receive()
            if msg["type"] == "websocket.disconnect":
                return
