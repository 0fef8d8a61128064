"""What a running function sees: its deadline, its caller's headers, and the bus."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TypeVar, overload

from engine._client import Client
from engine._kv import Bucket
from engine.protocol import HDR_TRACEPARENT

T = TypeVar("T")


class Context:
    __slots__ = ("client", "deadline", "function_id", "headers", "worker_name")

    def __init__(
        self,
        client: Client,
        function_id: str,
        headers: Mapping[str, str],
        deadline: float,
        worker_name: str,
    ) -> None:
        self.client = client
        self.function_id = function_id
        self.headers = headers
        self.deadline = deadline
        self.worker_name = worker_name

    def remaining(self) -> float:
        return self.deadline - time.time()

    def _propagated(self) -> dict[str, str] | None:
        tp = self.headers.get(HDR_TRACEPARENT)
        return {HDR_TRACEPARENT: tp} if tp else None

    @overload
    async def call(
        self,
        function_id: str,
        payload: Any = None,
        *,
        response: type[T],
        timeout: float | None = None,
    ) -> T: ...

    @overload
    async def call(
        self,
        function_id: str,
        payload: Any = None,
        *,
        response: None = None,
        timeout: float | None = None,
    ) -> Any: ...

    async def call(
        self,
        function_id: str,
        payload: Any = None,
        *,
        response: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """A nested call; it can never outlive this call's own deadline."""
        return await self.client.call(
            function_id,
            payload,
            response=response,
            timeout=timeout,
            deadline=self.deadline,
            headers=self._propagated(),
        )

    async def fire(self, function_id: str, payload: Any = None) -> None:
        await self.client.fire(function_id, payload, headers=self._propagated())

    async def bucket(self, bucket: str, **config: Any) -> Bucket:
        return await self.client.bucket(bucket, **config)
