"""A small keep-alive HTTP/1.1 client on asyncio streams, for load that must run inside the
benchmark (retries, failover, checking each reply), where wrk cannot, and cheaper per
request than httpx (which caps near 430 req/s here). JSON bodies with Content-Length only:
what the product's REST server (uvicorn) sends."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec

_enc = msgspec.json.Encoder()


class HttpFailure(Exception):
    """No reply: connection refused or reset, or a malformed response."""


class Connection:
    """One persistent connection to `host:port`, reopened when it breaks."""

    def __init__(self, host: str, port: int, secret: str) -> None:
        self.host, self.port = host, port
        self._auth = f"Authorization: Bearer {secret}\r\n".encode()
        self._r: asyncio.StreamReader | None = None
        self._w: asyncio.StreamWriter | None = None

    async def _open(self) -> None:
        try:
            self._r, self._w = await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            raise HttpFailure(f"connect {self.port}: {exc}") from None

    def close(self) -> None:
        if self._w is not None:
            with contextlib.suppress(Exception):
                self._w.close()
        self._r = self._w = None

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        """(status, body). Raises HttpFailure when no reply came; the connection is closed
        then, and the next request opens a new one."""
        if self._w is None:
            await self._open()
        assert self._r is not None and self._w is not None
        data = b"" if body is None else _enc.encode(body)
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        ).encode()
        try:
            self._w.write(head + self._auth + b"\r\n" + data)
            await self._w.drain()
            status_line = await self._r.readline()
            if not status_line:
                raise HttpFailure("connection closed")
            status = int(status_line.split(b" ", 2)[1])
            length = 0
            while True:
                line = await self._r.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            payload = await self._r.readexactly(length) if length else b""
            return status, payload
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError) as exc:
            self.close()
            raise HttpFailure(f"{method} {path} on {self.port}: {exc!r}") from None
        except BaseException:
            self.close()  # cancelled mid-reply: the stream is out of step
            raise
