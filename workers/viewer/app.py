"""The viewer web app: the page (its nonce filled in per response), its static modules,
the REST calls it makes (forwarded with the secret) and its live socket."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket

from workers.viewer.auth import Spent, ViewerAuth
from workers.viewer.guard import NONCE_KEY, ViewerGuard
from workers.viewer.live import Hub, follow
from workers.viewer.proxy import RestProxy
from workers.viewer.settings import ViewerSettings
from workers.viewer.tokens import cookie_name

STATIC = Path(__file__).parent / "static"
_PAGE = (STATIC / "index.html").read_text()


def build_app(
    settings: ViewerSettings, hub: Hub, proxy: RestProxy, spent: Spent | None
) -> ViewerGuard:
    """`spent`: where used login links are remembered; None turns the login off."""

    async def index(request: Request) -> Response:
        nonce = request.scope["state"][NONCE_KEY]
        return HTMLResponse(
            _PAGE.replace("{{nonce}}", nonce), headers={"cache-control": "no-store"}
        )

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def favicon(request: Request) -> Response:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    async def logout(request: Request) -> Response:
        resp = RedirectResponse("/", status_code=303)
        resp.delete_cookie(cookie_name(settings.port), path="/", httponly=True, samesite="strict")
        return resp

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
            Route("/favicon.svg", favicon),
            Route("/logout", logout, methods=["POST"]),
            Route(
                "/agentmemory/{rest:path}", proxy.forward, methods=["GET", "POST", "PUT", "DELETE"]
            ),
            WebSocketRoute("/live", live),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={404: not_found},
    )
    auth = ViewerAuth(app, settings.secret, settings.port, settings.instance, spent)
    return ViewerGuard(auth, settings.origins)
