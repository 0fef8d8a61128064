"""The console web app: JSON API under /api, a dependency-free single page, auth around all."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from engine import FunctionError
from workers.console import api_engine, api_kv, api_observe, api_streams
from workers.console.auth import ConsoleAuth
from workers.console.hub import Hub
from workers.console.web import error_response, json_response

STATIC = Path(__file__).parent / "static"


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})


async def healthz(request: Request) -> Response:
    return json_response({"ok": True})


async def about(request: Request) -> Response:
    """Where the console's neighbours are: the viewer shows and edits memory records."""
    settings = request.app.state.hub.settings
    return json_response({"viewer": f"http://127.0.0.1:{settings.viewer_port}/"})


async def not_found(request: Request, exc: Exception) -> Response:
    return error_response(FunctionError("NOT_FOUND", f"no such console path {request.url.path}"))


async def function_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, FunctionError)
    return error_response(exc)


async def internal(request: Request, exc: Exception) -> Response:
    return error_response(FunctionError("INTERNAL", f"console failed: {type(exc).__name__}"))


def build_app(hub: Hub) -> ConsoleAuth:
    app = Starlette(
        routes=[
            Route("/", index),
            Route("/healthz", healthz),
            Route("/api/about", about),
            *api_engine.routes,
            *api_kv.routes,
            *api_streams.routes,
            *api_observe.routes,
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={
            404: not_found,
            FunctionError: function_error,
            Exception: internal,
        },
    )
    app.state.hub = hub
    return ConsoleAuth(app, hub.settings.secret)
