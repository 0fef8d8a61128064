"""A two-process call chain for the tracing test: `CHAIN_ROLE=front` serves chain::front
(behind an HTTP route), which calls chain::store in the `store` process, which writes KV."""

from __future__ import annotations

import os

import msgspec

from engine import Context, HttpRequest, HttpResponse, Worker

ROLE = os.environ.get("CHAIN_ROLE", "front")
worker = Worker(f"chain-{ROLE}")


class StoreIn(msgspec.Struct):
    key: str
    value: str


if ROLE == "front":

    @worker.function("chain::front")
    async def front(req: HttpRequest, ctx: Context) -> HttpResponse:
        body = req.json(StoreIn)
        rev = await ctx.call("chain::store", body)
        return HttpResponse(status=201, body={"stored": body.key, "revision": rev})

    worker.trigger("http", "chain::front", method="POST", path="/chain")

else:

    @worker.function("chain::store")
    async def store(req: StoreIn, ctx: Context) -> int:
        return await (await ctx.bucket("chain")).put(req.key, req.value)


if __name__ == "__main__":
    worker.run()
