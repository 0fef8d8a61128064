"""The viewer's REST calls: `/agentmemory/*` on the viewer's port goes to the REST port with
the secret added, so the page uses upstream's routes and gets their validation and errors.

Reads go through; of the writes, only what the pages do: remember (edit = new version),
forget, the searches, transcript imports, and the quarantine's release and hold. Anything
else the REST API offers needs the secret, as before."""

from __future__ import annotations

import httpx
import msgspec
from starlette.requests import Request
from starlette.responses import Response

WRITES = frozenset(
    {
        "remember",
        "forget",
        "search",
        "smart-search",
        "graph/query",
        "lessons/recall",
        "replay/import-jsonl",
        "team/resolve",
        "quarantine/release",
        "quarantine/hold",
    }
)
MAX_BODY = 17 * 1024 * 1024
"""A 16 MiB transcript upload and its JSON envelope."""
SLOW = frozenset({"replay/import-jsonl"})
_KEEP = ("content-type", "cache-control", "location", "retry-after")


def _error(status: int, code: str, message: str, field: str | None = None) -> Response:
    body: dict[str, object] = {"code": code, "message": message}
    if field:
        body["field"] = field
    return Response(
        msgspec.json.encode({"error": body}), status_code=status, media_type="application/json"
    )


class RestProxy:
    def __init__(self, rest_port: int, secret: str) -> None:
        self.base = f"http://127.0.0.1:{rest_port}"
        self.secret = secret
        self.http = httpx.AsyncClient(timeout=60.0)

    async def close(self) -> None:
        await self.http.aclose()

    async def forward(self, request: Request) -> Response:
        rest = str(request.path_params["rest"])
        method = request.method
        if method not in ("GET", "POST") or (method == "POST" and rest not in WRITES):
            return _error(
                405,
                "METHOD_NOT_ALLOWED",
                f"the viewer does not forward {method} /agentmemory/{rest}",
                "method",
            )
        body = await request.body()
        if len(body) > MAX_BODY:
            return _error(413, "TOO_LARGE", f"request body over {MAX_BODY} bytes", "body")
        headers = {"authorization": f"Bearer {self.secret}", "accept": "application/json"}
        if body:
            headers["content-type"] = request.headers.get("content-type", "application/json")
        try:
            resp = await self.http.request(
                method,
                f"{self.base}/agentmemory/{rest}",
                params=str(request.query_params),
                content=body or None,
                headers=headers,
                timeout=600.0 if rest in SLOW else 60.0,
            )
        except httpx.HTTPError as exc:
            return _error(
                503,
                "UNAVAILABLE",
                f"the REST port {self.base} did not answer ({type(exc).__name__}); is the "
                "memory worker running? (`agentmemory status`)",
            )
        out = {k: v for k, v in resp.headers.items() if k.lower() in _KEEP}
        return Response(resp.content, status_code=resp.status_code, headers=out)
