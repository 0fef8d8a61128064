"""The viewer web app: the page (its nonce filled in per response), its static modules,
the REST calls it makes (forwarded with the secret) and its live socket."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket

from workers.viewer.guard import NONCE_KEY, ViewerGuard
from workers.viewer.live import Hub, follow
from workers.viewer.proxy import RestProxy
from workers.viewer.settings import ViewerSettings

STATIC = Path(__file__).parent / "static"
_PAGE = (STATIC / "index.html").read_text()


def build_app(settings: ViewerSettings, hub: Hub, proxy: RestProxy) -> ViewerGuard:
    async def index(request: Request) -> Response:
        nonce = request.scope["state"][NONCE_KEY]
        return HTMLResponse(
            _PAGE.replace("{{nonce}}", nonce), headers={"cache-control": "no-store"}
        )

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def live(ws: WebSocket) -> None:
        await follow(ws, hub)

    async def not_found(request: Request, exc: Exception) -> Response:
        return JSONResponse(
            {"error": {"code": "NOT_FOUND", "message": f"no viewer path {request.url.path}"}},
            status_code=404,
        )

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/healthz", healthz),
            Route(
                "/agentmemory/{rest:path}", proxy.forward, methods=["GET", "POST", "PUT", "DELETE"]
            ),
            WebSocketRoute("/live", live),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={404: not_found},
    )
    return ViewerGuard(app, settings.origins)
