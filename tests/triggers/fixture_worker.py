"""Functions and trigger declarations the trigger tests drive: `python -m
tests.triggers.fixture_worker <group> ...` declares only the named groups' triggers."""

from __future__ import annotations

import asyncio
import os
import sys

import msgspec

from engine import Context, FunctionError, Http, HttpRequest, HttpResponse, Worker

worker = Worker("trigger-fixtures")


class Note(msgspec.Struct):
    text: str
    n: int = 0


@worker.function("t::echo")
async def echo(req: HttpRequest, ctx: Context) -> HttpResponse:
    return HttpResponse(
        status=201 if req.method == "POST" else 200,
        headers={"x-fn": "echo"},
        body={
            "method": req.method,
            "path": req.path,
            "params": req.path_params,
            "query": req.query,
            "headers": req.headers,
            "body": req.json(),
        },
    )


@worker.function("t::slow")
async def slow(req: HttpRequest, ctx: Context) -> HttpResponse:
    seconds = float(req.query.get("s", "2"))
    await asyncio.sleep(seconds)
    st = await ctx.bucket("fixtures")
    await st.put("slow-finished", req.query.get("tag", "x"))
    return HttpResponse(body={"slept": seconds})


@worker.function("t::fail")
async def fail(req: HttpRequest, ctx: Context) -> HttpResponse:
    code = req.query.get("code", "CONFLICT")
    raise FunctionError(code, f"failed with {code}", field=req.query.get("field"))


@worker.function("t::crash")
async def crash(req: HttpRequest, ctx: Context) -> HttpResponse:
    raise RuntimeError("secret internals /home/x/file.py line 3")


@worker.function("t::html")
async def html(req: HttpRequest, ctx: Context) -> HttpResponse:
    return HttpResponse(body="<h1>hi</h1>", content_type="text/html; charset=utf-8")


@worker.function("t::note")
async def note(req: Note, ctx: Context) -> Note:
    return Note(text=req.text.upper(), n=req.n + 1)


class Page(msgspec.Struct, rename="camel", kw_only=True):
    limit: int = 10
    flag: bool = False
    name: str = ""
    agent_id: str = ""


class Outcome(msgspec.Struct):
    status: str


def declare_routes() -> None:
    """Functions whose routes come from their own declaration (`http=Http(...)`)."""

    @worker.function(
        "t::page", http=Http("GET", "/t/page/{name}", headers={"x-agent-id": "agentId"})
    )
    async def page(req: Page, ctx: Context) -> Page:
        return req

    @worker.function("t::merge", http=Http("PATCH", "/t/merge/{name}", source="merge"))
    async def merge(req: Page, ctx: Context) -> Page:
        return req

    @worker.function(
        "t::outcome",
        http=Http("POST", "/t/outcome", status=201, status_field="status", status_by={"dup": 200}),
    )
    async def outcome(req: Outcome, ctx: Context) -> Outcome:
        return req

    @worker.function("t::page-html")
    async def page_html(req: HttpRequest, ctx: Context) -> HttpResponse:
        name = req.path_params["name"]
        return HttpResponse(body=f"<p>{name}</p>", content_type="text/html; charset=utf-8")

    worker.trigger("http", "t::page-html", path="/t/page/{name}", accept="text/html")


def declare_http() -> None:
    declare_routes()
    worker.trigger("http", "t::echo", method="POST", path="/t/echo/{name}")
    worker.trigger("http", "t::echo", method="GET", path="/t/echo/{name}")
    worker.trigger("http", "t::echo", method="GET", path="/t/open", auth="none")
    worker.trigger("http", "t::echo", method="POST", path="/t/small", max_body=64)
    worker.trigger("http", "t::slow", method="GET", path="/t/slow", timeout=0.5)
    worker.trigger("http", "t::slow", method="POST", path="/t/slow-ok", timeout=10)
    worker.trigger("http", "t::fail", method="GET", path="/t/fail")
    worker.trigger("http", "t::crash", method="GET", path="/t/crash")
    worker.trigger("http", "t::html", method="GET", path="/t/html", auth="none")
    worker.trigger(
        "http",
        "t::note",
        method="POST",
        path="/t/note",
        mode="body",
        status=201,
        summary="Uppercase a note",
        body_schema=msgspec.json.schema(Note),
        response_schema=msgspec.json.schema(Note),
    )
    # No schemas declared: the OpenAPI document takes them from the function's own types.
    worker.trigger("http", "t::note", method="PUT", path="/t/note", mode="body")


class Job(msgspec.Struct):
    id: str
    sleep: float = 0.0


async def _bump(ctx: Context, key: str, by: int = 1) -> int:
    st = await ctx.bucket("fixtures")
    return int(await st.update(key, lambda cur: (cur or 0) + by) or 0)


@worker.function("t::record", timeout=60)
async def record(req: Job, ctx: Context) -> None:
    """Idempotent: the job counts once however often it is delivered."""
    await _bump(ctx, f"starts.{req.id}")
    if req.sleep and ctx.headers.get("Queue-Attempt", "1") == "1":
        await asyncio.sleep(req.sleep)
    st = await ctx.bucket("fixtures")
    if await st.create(f"done.{req.id}", ctx.headers.get("Idempotency-Key", "")) is not None:
        await _bump(ctx, f"count.{req.id}")


@worker.function("t::flaky")
async def flaky(req: Job, ctx: Context) -> None:
    """Fails until the key `healed` exists."""
    await _bump(ctx, f"attempts.{req.id}")
    st = await ctx.bucket("fixtures")
    if await st.get("healed") is None:
        raise RuntimeError("not healed yet")
    await st.put(f"done.{req.id}", True)


@worker.function("t::reject")
async def reject(req: Job, ctx: Context) -> None:
    raise FunctionError("BAD_REQUEST", "never valid", field="id")


@worker.function("t::gauge")
async def gauge(req: Job, ctx: Context) -> None:
    """Records the highest number of calls running at once."""
    now = await _bump(ctx, "gauge.now")
    st = await ctx.bucket("fixtures")
    await st.update("gauge.max", lambda cur: max(cur or 0, now))
    await asyncio.sleep(req.sleep)
    await _bump(ctx, "gauge.now", -1)
    await _bump(ctx, "gauge.done")


def declare_queue() -> None:
    worker.trigger("queue", "t::record", queue="record", timeout=2, backoff=0.2)
    worker.trigger("queue", "t::flaky", queue="flaky", max_attempts=3, backoff=0.1)
    worker.trigger("queue", "t::reject", queue="reject", max_attempts=5, backoff=0.1)
    worker.trigger("queue", "t::gauge", queue="gauge", concurrency=2)


@worker.function("t::tick")
async def tick(req: dict[str, int], ctx: Context) -> None:
    """Counts firings; a second firing of the same tick is counted as a duplicate."""
    st = await ctx.bucket("fixtures")
    key = ctx.headers.get("Idempotency-Key", "").replace(":", "_")
    if await st.create(f"tick.{key}", True) is None:
        await _bump(ctx, "ticks.dup")
    await _bump(ctx, "ticks")


@worker.function("t::manual")
async def manual(req: dict[str, int], ctx: Context) -> None:
    """Fails its first attempt at each tick, to exercise cron retries."""
    key = ctx.headers.get("Idempotency-Key", "").replace(":", "_")
    n = await _bump(ctx, f"manual.{key}")
    await _bump(ctx, "manual.calls")
    if n == 1:
        raise FunctionError("UNAVAILABLE", "first attempt fails")
    await _bump(ctx, f"manual.ok.{req.get('n', 0)}")


def declare_cron() -> None:
    worker.trigger("cron", "t::tick", schedule="* * * * * *")
    worker.trigger(
        "cron", "t::manual", schedule="0 0 1 1 *", tz="Europe/Paris", backoff=0.2, payload={"n": 7}
    )


class Item(msgspec.Struct):
    n: int
    sleep: float = 0.0


@worker.function("t::fan-a")
async def fan_a(req: Item, ctx: Context) -> None:
    await _bump(ctx, f"fan.a.{req.n}")


@worker.function("t::fan-b")
async def fan_b(req: Item, ctx: Context) -> None:
    await _bump(ctx, f"fan.b.{req.n}")


@worker.function("t::consume")
async def consume(req: Item, ctx: Context) -> None:
    """Idempotent stream consumer that also checks it sees messages in order."""
    await asyncio.sleep(req.sleep)
    st = await ctx.bucket("fixtures")
    if await st.create(f"seen.{req.n}", ctx.headers.get("Stream-Seq", "")) is None:
        await _bump(ctx, "consume.dup")
        return
    last = await st.get("consume.last")
    if last is not None and req.n <= last:
        await _bump(ctx, "consume.disorder")
    await st.put("consume.last", req.n)
    await _bump(ctx, "consume.count")


@worker.function("t::watch")
async def watch(req: dict[str, object], ctx: Context) -> None:
    line = f"{req['op']}:{req['key']}:{req.get('old')}:{req.get('new')}"
    st = await ctx.bucket("fixtures")
    await st.update("state.log", lambda cur: [*(cur or []), line])


def declare_cron_skip() -> None:
    worker.trigger("cron", "t::tick", schedule="*/3 * * * * *", catch_up="skip", grace=0.5)


def declare_pubsub() -> None:
    worker.trigger("subscribe", "t::fan-a", topic="news")
    worker.trigger("subscribe", "t::fan-b", topic="news")


def declare_stream() -> None:
    worker.trigger("stream", "t::consume", stream="EVENTS", subject="events.>")


def declare_state() -> None:
    worker.trigger("state", "t::watch", bucket="things")


def declare_state_ttl() -> None:
    worker.trigger("state", "t::watch", bucket="expiring")


GROUPS = {
    "http": declare_http,
    "queue": declare_queue,
    "cron": declare_cron,
    "cron-skip": declare_cron_skip,
    "subscribe": declare_pubsub,
    "stream": declare_stream,
    "state": declare_state,
    "state-ttl": declare_state_ttl,
}

if __name__ == "__main__":
    for group in sys.argv[1:] or os.environ.get("FIXTURE_GROUPS", "").split():
        GROUPS[group]()
    worker.run()
