"""Dead letters of the queue trigger: list, redrive into their queue, or discard.

Functions: `engine::dlq-list` {queue?, limit?, after?}, `engine::dlq-redrive` and
`engine::dlq-discard` {seq} | {queue} | {all: true}.
"""

from __future__ import annotations

from typing import Any

import msgspec
import nats.js.errors
from nats.js.client import JetStreamContext

from engine import Context, FunctionError, Worker
from triggers.queue.streams import DLQ_PREFIX, DLQ_STREAM, ensure_queue_stream, subject


class DlqList(msgspec.Struct, kw_only=True):
    queue: str = ""
    limit: int = 100
    after: int = 0
    """Only dead letters with a stream sequence above this (paging)."""


class DeadLetter(msgspec.Struct, kw_only=True):
    seq: int
    queue: str
    function_id: str
    error: dict[str, Any]
    attempts: int
    msg_id: str
    failed_at_ms: int
    payload: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class DlqPage(msgspec.Struct):
    items: list[DeadLetter]
    next_after: int


class DlqSelect(msgspec.Struct, kw_only=True):
    seq: int = 0
    queue: str = ""
    all: bool = False


class DlqResult(msgspec.Struct):
    count: int
    seqs: list[int]


async def _scan(js: JetStreamContext, queue: str, after: int, limit: int) -> list[DeadLetter]:
    filt = DLQ_PREFIX + (queue or ">")
    out: list[DeadLetter] = []
    seq = after + 1
    while len(out) < limit:
        try:
            raw = await js.get_msg(DLQ_STREAM, seq=seq, subject=filt, next=True)
        except nats.js.errors.NotFoundError:
            break
        out.append(_letter(raw))
        seq = (raw.seq or seq) + 1
    return out


def _letter(raw: Any) -> DeadLetter:
    h = raw.headers or {}
    try:
        error = msgspec.json.decode(h.get("Dlq-Error", "{}"))
    except msgspec.DecodeError:
        error = {"message": h.get("Dlq-Error", "")}
    data: bytes = raw.data or b""
    return DeadLetter(
        seq=raw.seq,
        queue=h.get("Dlq-Queue", ""),
        function_id=h.get("Dlq-Function", ""),
        error=error.get("error", error) if isinstance(error, dict) else {},
        attempts=int(h.get("Dlq-Attempts", "0") or 0),
        msg_id=h.get("Dlq-Msg-Id", ""),
        failed_at_ms=int(h.get("Dlq-Failed-At", "0") or 0),
        payload=msgspec.Raw(data) if data else msgspec.UNSET,
    )


async def _select(js: JetStreamContext, sel: DlqSelect) -> list[DeadLetter]:
    if sel.seq:
        try:
            raw = await js.get_msg(DLQ_STREAM, seq=sel.seq)
        except nats.js.errors.NotFoundError:
            raise FunctionError("NOT_FOUND", f"no dead letter with seq {sel.seq}") from None
        return [_letter(raw)]
    if not sel.queue and not sel.all:
        raise FunctionError("BAD_REQUEST", "give a seq, a queue, or all: true", field="seq")
    found: list[DeadLetter] = []
    after = 0
    while True:
        page = await _scan(js, sel.queue, after, 500)
        if not page:
            return found
        found.extend(page)
        after = page[-1].seq


def install_dead_letter_functions(worker: Worker) -> None:
    @worker.function("engine::dlq-list", description="List dead letters, oldest first")
    async def dlq_list(req: DlqList, ctx: Context) -> DlqPage:
        if req.limit < 1 or req.limit > 1000:
            raise FunctionError("BAD_REQUEST", "limit must be 1..1000", field="limit")
        items = await _scan(ctx.client.nc.jetstream(), req.queue, req.after, req.limit)
        return DlqPage(items, items[-1].seq if items else req.after)

    @worker.function("engine::dlq-redrive", description="Put dead letters back in their queue")
    async def dlq_redrive(req: DlqSelect, ctx: Context) -> DlqResult:
        js = ctx.client.nc.jetstream()
        done: list[int] = []
        for letter in await _select(js, req):
            await ensure_queue_stream(ctx.client, letter.queue)
            data = bytes(letter.payload) if isinstance(letter.payload, msgspec.Raw) else b""
            # A fresh id per dead letter: the original may still sit in the dedup window,
            # and a redrive retried after a lost reply must not enqueue twice.
            headers = {
                "Nats-Msg-Id": f"{letter.msg_id}:redrive:{letter.seq}",
                "Idempotency-Key": letter.msg_id,
            }
            await js.publish(subject(letter.queue), data, headers=headers)
            await js.delete_msg(DLQ_STREAM, letter.seq)
            done.append(letter.seq)
        return DlqResult(len(done), done)

    @worker.function("engine::dlq-discard", description="Delete dead letters")
    async def dlq_discard(req: DlqSelect, ctx: Context) -> DlqResult:
        js = ctx.client.nc.jetstream()
        done: list[int] = []
        for letter in await _select(js, req):
            await js.delete_msg(DLQ_STREAM, letter.seq)
            done.append(letter.seq)
        return DlqResult(len(done), done)
