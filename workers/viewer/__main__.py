"""`python -m workers.viewer`: the viewer on 127.0.0.1:3113 (or AGENTMEMORY_VIEWER_PORT),
its operations (snapshot, older activity, trends for the charts) and the redirect from
`GET /agentmemory/viewer` on the REST port."""

from __future__ import annotations

from engine import Client, Worker
from functions.viewer.activity import Activity
from functions.viewer.snapshot import ViewerService
from functions.viewer.trends import TrendsService
from workers.viewer.server import ViewerServer
from workers.viewer.settings import ViewerSettings


def build(settings: ViewerSettings | None = None) -> Worker:
    settings = settings or ViewerSettings.from_env()
    worker = Worker("viewer", description="the memory viewer (web)")
    activity = Activity()
    service = ViewerService(
        settings.port,
        rest_port=settings.rest_port,
        secret_hint=settings.secret_hint,
        activity=activity,
    )
    server = ViewerServer(settings, activity)
    trends = TrendsService()
    worker.serve(service)
    worker.serve(trends)
    # Day records for the charts keep up in the background (every answer folds too).
    worker.trigger("cron", "mem::viewer::fold", schedule="*/5 * * * *", timeout=120)

    @worker.on_start
    async def _start(client: Client) -> None:
        await service.start(client)
        await trends.start(client)
        await server.start(client)

    worker.on_drain(trends.drain)  # a fold of a long backlog must not hold the stop

    @worker.on_stop
    async def _stop(client: Client) -> None:
        await server.stop()

    return worker


if __name__ == "__main__":
    build().run()
