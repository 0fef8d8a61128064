"""An example worker: the smallest useful functions, used by `make run` and the tests."""

from __future__ import annotations

import asyncio

import msgspec

from engine import Context, ErrorCode, FunctionError, Http, Worker

worker = Worker("example", description="echo, fail, sleep and a KV counter")


class Echo(msgspec.Struct):
    text: str = ""


class Fail(msgspec.Struct):
    code: ErrorCode = "BAD_REQUEST"
    message: str = "asked to fail"
    field: str | None = None


class Sleep(msgspec.Struct):
    seconds: float


class Counter(msgspec.Struct):
    key: str
    by: int = 1


class Count(msgspec.Struct):
    value: int


class Who(msgspec.Struct):
    pid: int


@worker.function("example::noop", description="returns the request body unchanged")
async def noop(req: bytes, ctx: Context) -> bytes:
    return req


@worker.function(
    "example::echo",
    http=Http("POST", "/example/echo", tags=["example"]),
)
async def echo(req: Echo, ctx: Context) -> Echo:
    """Echo the text back."""
    return Echo(text=req.text)


@worker.function("example::fail")
async def fail(req: Fail, ctx: Context) -> None:
    """Fail on purpose with the given code."""
    raise FunctionError(req.code, req.message, field=req.field)


@worker.function("example::sleep", timeout=60)
async def sleep(req: Sleep, ctx: Context) -> Sleep:
    """Sleep, to exercise deadlines and drains."""
    await asyncio.sleep(req.seconds)
    return req


@worker.function("example::whoami")
async def whoami(req: None, ctx: Context) -> Who:
    import os

    return Who(pid=os.getpid())


@worker.function("example::count")
async def count(req: Counter, ctx: Context) -> Count:
    """Add to a KV counter with compare-and-set (safe across replicas)."""
    st = await ctx.bucket("example")
    new = await st.update(req.key, lambda cur: (cur or 0) + req.by)
    return Count(value=int(new or 0))


@worker.function("example::relay")
async def relay(req: Echo, ctx: Context) -> Echo:
    """Call example::echo: a nested call under this call's deadline."""
    out: Echo = await ctx.call("example::echo", req, response=Echo)
    return Echo(text="relayed:" + out.text)


class Forward(msgspec.Struct):
    function: str
    payload: msgspec.Raw = msgspec.Raw(b"null")
    timeout: float | None = None


@worker.function("example::forward")
async def forward(req: Forward, ctx: Context) -> msgspec.Raw:
    """Call any function with a payload and return its reply (or raise its error)."""
    return await ctx.call(req.function, req.payload, response=msgspec.Raw, timeout=req.timeout)


if __name__ == "__main__":
    worker.run()
