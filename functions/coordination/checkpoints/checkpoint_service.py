"""Checkpoints' operations: create, resolve, list, and upstream's one-tool form of the three."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import FunctionError, Tool, operation
from functions.coordination.checkpoints import core
from functions.coordination.checkpoints.wire import (
    CheckpointCreateIn,
    CheckpointListIn,
    CheckpointOpIn,
    CheckpointOut,
    CheckpointResolveIn,
)
from functions.coordination.store import ConceptService, CoordOwner, rest


class CheckpointService(ConceptService[CoordOwner]):
    @operation(
        "mem::checkpoint-create",
        description="Create a checkpoint (CI result, approval, deploy) gating actions",
        http=rest("POST", "checkpoints", status=201),
    )
    async def checkpoint_create(self, req: CheckpointCreateIn) -> CheckpointOut:
        return await core.create(self.cs, req)

    @operation(
        "mem::checkpoint-resolve",
        description="Resolve a checkpoint: passed unblocks the actions it gates",
        http=rest("POST", "checkpoints/resolve"),
    )
    async def checkpoint_resolve(self, req: CheckpointResolveIn) -> CheckpointOut:
        return await core.resolve(self.cs, req)

    @operation(
        "mem::checkpoint-list",
        description="List checkpoints (?status=&type=)",
        http=rest("GET", "checkpoints"),
    )
    async def checkpoint_list(self, req: CheckpointListIn) -> CheckpointOut:
        return await core.listing(self.cs, req)

    @operation(
        "mem::checkpoint",
        description="Create or resolve an external checkpoint (CI result, approval, deploy "
        "status) that gates action progress.",
        tool=Tool("memory_checkpoint"),
    )
    async def checkpoint(self, req: CheckpointOpIn) -> CheckpointOut:
        try:
            if req.operation == "create":
                return await core.create(self.cs, msgspec.convert(_fields(req), CheckpointCreateIn))
            if req.operation == "resolve":
                return await core.resolve(
                    self.cs, msgspec.convert(_fields(req), CheckpointResolveIn)
                )
            return await core.listing(self.cs, msgspec.convert(_fields(req), CheckpointListIn))
        except msgspec.ValidationError as exc:
            raise FunctionError(
                "BAD_REQUEST", f"{req.operation}: {exc}", field=_field_of(exc)
            ) from None


def _fields(req: CheckpointOpIn) -> dict[str, Any]:
    return {k: v for k, v in msgspec.to_builtins(req).items() if v not in ("", None, [])}


def _field_of(exc: msgspec.ValidationError) -> str | None:
    text = str(exc)
    if "`$." in text:
        return text.split("`$.", 1)[1].split("`", 1)[0].split("[", 1)[0]
    if "required field `" in text:
        return text.split("required field `", 1)[1].split("`", 1)[0]
    return None
