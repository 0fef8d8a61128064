"""The scaffolding every operation family shares: its routes under /agentmemory/, and a
service served over the store of the worker's main service (its owner)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from engine import Bucket, FunctionError, Http
from functions.kernel.store import MemoryStore, StoreOwner

PREFIX = "/agentmemory/"


def routes(
    tag: str, *, headers: dict[str, str] | None = None, prefix: str = PREFIX
) -> Callable[..., Http]:
    """`rest(method, path, **Http fields)`: a route of family `tag` under `prefix`, its
    request filled from `headers` (header -> field) where the request leaves it empty."""

    def rest(method: str, path: str, **kw: Any) -> Http:
        if headers is not None:
            kw.setdefault("headers", headers)
        return Http(method, prefix + path, tags=[tag], **kw)

    return rest


Owner = TypeVar("Owner", bound=StoreOwner)
T = TypeVar("T")


def started(value: T | None, what: str) -> T:
    """What a service opens in its start hook; until then a call is told to retry."""
    if value is None:
        raise FunctionError("UNAVAILABLE", f"{what} is starting", retryable=True)
    return value


class OwnedService(Generic[Owner]):
    """A family of operations served beside the worker's main service (its owner, of type
    `Owner`), over its store. `BUCKET`: the KV bucket the family keeps its own records in."""

    BUCKET: ClassVar[str] = ""

    def __init__(self, owner: Owner) -> None:
        self.owner = owner

    @property
    def store(self) -> MemoryStore:
        return self.owner.store

    async def bucket(self) -> Bucket:
        if not self.BUCKET:
            raise RuntimeError(f"{type(self).__name__} keeps no bucket of its own")
        state: Bucket = await self.store.client.bucket(self.BUCKET)
        return state
