"""`python -m workers.viewer`: the viewer on 127.0.0.1:3113 (or AGENTMEMORY_VIEWER_PORT),
its snapshot operation, and the redirect from `GET /agentmemory/viewer` on the REST port."""

from __future__ import annotations

from engine import Client, Context, HttpRequest, HttpResponse, Worker
from functions.viewer.snapshot import ViewerService
from workers.viewer.server import ViewerServer
from workers.viewer.settings import ViewerSettings

REDIRECT_SCHEMA = {
    "type": "object",
    "properties": {"viewer": {"type": "string", "format": "uri"}},
    "required": ["viewer"],
}


def build(settings: ViewerSettings | None = None) -> Worker:
    settings = settings or ViewerSettings.from_env()
    worker = Worker("viewer", description="the memory viewer (web)")
    service = ViewerService(settings.port)
    server = ViewerServer(settings)
    worker.serve(service)

    @worker.function("mem::viewer::open", description="Open the viewer (a redirect to its port)")
    async def open_viewer(req: HttpRequest, ctx: Context) -> HttpResponse:
        return await service.open_viewer(req)

    worker.trigger(
        "http",
        "mem::viewer::open",
        method="GET",
        path="/agentmemory/viewer",
        auth="none",
        status=302,
        summary="Open the viewer: a browser is redirected to the viewer's port",
        tags=["viewer"],
        response_schema=REDIRECT_SCHEMA,
    )

    @worker.on_start
    async def _start(client: Client) -> None:
        await service.start(client)
        await server.start(client)

    @worker.on_stop
    async def _stop(client: Client) -> None:
        await server.stop()

    return worker


if __name__ == "__main__":
    build().run()
