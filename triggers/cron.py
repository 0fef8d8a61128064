"""The `cron` trigger on NATS server message schedules (nats-server >= 2.14).

Config keys of a `cron` trigger:

- `schedule` (required): 6-field cron with seconds (`*/5 * * * * *`), 5-field cron
  (`0 3 * * *`, run at second 0), or the server's `@every 30s` / `@hourly` / `@daily` forms.
- `tz`: IANA time zone of the expression (`Europe/Paris`), default UTC.
- `catch_up`: what to do after downtime, "once" (default) or "skip" — see below.
- `grace`: seconds after which an undelivered tick counts as missed (for "skip"), default 5.
- `max_attempts` / `backoff` / `timeout`: retries of a failing firing (default 3 attempts,
  1 s doubling, 30 s per call).
- `payload`: JSON value the function receives, default `{}`.

How it works: the schedule is a message on `cron.sched.<trigger id>` in the `CRON` stream
(created with `allow_msg_schedules`); the server itself stores one tick per due time on
`cron.tick.<trigger id>`. All cron worker replicas pull ticks from one shared durable
consumer, so each tick fires exactly one call however many replicas run; nothing lives only
in one process's memory. The stream keeps one message per subject, so ticks that fell due
while no cron worker ran collapse into the latest one.

Catch-up policy: "once" — after downtime the missed ticks fire once, at start; "skip" — a
tick first delivered more than `grace` seconds after it fell due is dropped. A failing firing
is retried (nak with backoff) up to `max_attempts`, then dropped with a warning; a newer
tick of the same schedule replaces one still being retried. Operators fire a trigger now
with `engine::cron-fire` {id} or {function_id}.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any, Literal

import msgspec
import nats.js.errors
from nats.aio.msg import Msg
from nats.js.api import StorageType
from nats.js.client import JetStreamContext

from engine import TRIGGERS_BUCKET, Client, Context, FunctionError, TriggerSpec, Worker
from triggers.consume import ConsumerLoop, backoff_delay, ensure_consumer
from triggers.plugin import SpecWatcher

log = logging.getLogger("triggers.cron")

STREAM = "CRON"
SCHED = "cron.sched."
TICK = "cron.tick."
DURABLE = "ticks"


UNAVAILABLE_RETRY = 3.0


class CronConfig(msgspec.Struct, kw_only=True):
    schedule: str
    tz: str = ""
    catch_up: Literal["once", "skip"] = "once"
    grace: float = 5.0
    max_attempts: int = 3
    backoff: float = 1.0
    timeout: float = 30.0
    payload: Any = msgspec.field(default_factory=dict)
    wait_unavailable: float = 300.0
    """Seconds a firing waits for its function when nothing serves it (UNAVAILABLE: its
    worker is still starting, or restarting), retried every few seconds without counting
    against `max_attempts`. A tick that fell due while the engine was down fires while the
    workers start; it used to be dropped before the lifecycle worker was up."""

    def __post_init__(self) -> None:
        self.schedule = server_schedule(self.schedule)


class FireIn(msgspec.Struct, kw_only=True):
    id: str = ""
    function_id: str = ""


class Fired(msgspec.Struct):
    id: str
    seq: int


def server_schedule(expr: str) -> str:
    """The server takes 6-field cron (with seconds) and `@` forms; 5-field gets second 0."""
    expr = " ".join(expr.split())
    if expr.startswith("@"):
        return expr
    fields = expr.split(" ")
    if len(fields) == 5:
        return "0 " + expr
    if len(fields) == 6:
        return expr
    raise ValueError(f"cron schedule {expr!r} must have 5 or 6 fields, or be an @ form")


async def ensure_cron_stream(client: Client) -> None:
    """The CRON stream, at the instance's replica count (the client's `replicas`)."""
    await client.stream(
        STREAM,
        subjects=["cron.>"],
        allow_msg_schedules=True,
        max_msgs_per_subject=1,
        storage=StorageType.FILE,
    ).ensure()


class CronTrigger:
    kind = "cron"

    def __init__(self) -> None:
        self._client: Client | None = None
        self._specs: dict[str, tuple[TriggerSpec, CronConfig]] = {}
        self._loop: ConsumerLoop | None = None
        self._watcher: SpecWatcher | None = None

    def install(self, worker: Worker) -> None:
        @worker.function("engine::cron-fire", description="Fire a cron trigger now")
        async def fire(req: FireIn, ctx: Context) -> Fired:
            return await fire_now(ctx.client, req.id, req.function_id)

    async def start(self, client: Client) -> None:
        self._client = client
        js = client.nc.jetstream()
        await ensure_cron_stream(client)
        await ensure_consumer(
            client, STREAM, DURABLE, filter_subject=TICK + ">", max_ack_pending=16
        )
        self._watcher = SpecWatcher(client, self)
        await self._watcher.start()
        await self._purge_orphans(js)
        self._loop = ConsumerLoop(client.nc, STREAM, DURABLE, self._handle, concurrency=8)
        self._loop.start()

    async def apply(self, spec: TriggerSpec) -> None:
        cfg = msgspec.convert(spec.config, CronConfig)
        self._specs[spec.id] = (spec, cfg)
        assert self._client is not None
        js = self._client.nc.jetstream()
        headers = {"Nats-Schedule": cfg.schedule, "Nats-Schedule-Target": TICK + spec.id}
        if cfg.tz:
            headers["Nats-Schedule-Time-Zone"] = cfg.tz
        data = msgspec.json.encode(cfg.payload)
        try:
            current = await js.get_last_msg(STREAM, SCHED + spec.id)
            if current.data == data and all(
                (current.headers or {}).get(k) == v for k, v in headers.items()
            ):
                return  # another replica (or an earlier run) already scheduled it
        except nats.js.errors.NotFoundError:
            pass
        await js.publish(SCHED + spec.id, data, headers=headers)
        log.debug("cron %s (%s %s) -> %s", spec.id, cfg.schedule, cfg.tz or "UTC", spec.function_id)

    async def _purge_orphans(self, js: JetStreamContext) -> None:
        """Drop schedules whose declaration was deleted while no cron worker ran; they would
        otherwise keep ticking into the stream for ever."""
        info = await js.stream_info(STREAM, subjects_filter=SCHED + ">")
        for subj in info.state.subjects or {}:
            tid = subj[len(SCHED) :]
            if tid not in self._specs:
                await js.purge_stream(STREAM, subject=SCHED + tid)
                await js.purge_stream(STREAM, subject=TICK + tid)
                log.info("cron %s: schedule of a deleted trigger removed", tid)

    async def remove(self, key: str) -> None:
        tid = key.partition(".")[2]
        if self._specs.pop(tid, None) is not None and self._client is not None:
            js = self._client.nc.jetstream()
            await js.purge_stream(STREAM, subject=SCHED + tid)
            await js.purge_stream(STREAM, subject=TICK + tid)

    async def stop(self) -> None:
        if self._loop is not None:
            await self._loop.stop()
        if self._watcher is not None:
            await self._watcher.stop()

    async def _handle(self, msg: Msg) -> None:
        tid = msg.subject[len(TICK) :]
        entry = self._specs.get(tid)
        if entry is None:
            log.warning("tick for unknown cron %s dropped", tid)
            await msg.ack()
            return
        spec, cfg = entry
        md = msg.metadata
        attempt = md.num_delivered or 1
        manual = (msg.headers or {}).get("Cron-Manual") == "true"
        assert self._client is not None
        # The tick's stamp is the server's clock: lateness is measured by it too (a host
        # whose clock ran a few seconds ahead skipped every tick as late).
        now = await self._client.bus_time()
        due = md.timestamp.timestamp() if md.timestamp else now
        if cfg.catch_up == "skip" and not manual and attempt == 1 and now - due > cfg.grace:
            log.info("cron %s: tick due %.1fs ago skipped (catch_up=skip)", tid, now - due)
            await msg.ack()
            return
        headers = {
            "Idempotency-Key": f"cron:{tid}:{md.sequence.stream}",
            "Cron-Due": dt.datetime.fromtimestamp(due, dt.UTC).isoformat(),
            "Cron-Attempt": str(attempt),
        }
        try:
            await self._client.call(
                spec.function_id, msg.data, timeout=cfg.timeout, headers=headers
            )
        except FunctionError as err:
            if err.code == "UNAVAILABLE" and now - due < cfg.wait_unavailable:
                log.debug("cron %s: %s not served yet, waiting", tid, spec.function_id)
                await msg.nak(
                    delay=min(UNAVAILABLE_RETRY, backoff_delay(attempt, cfg.backoff, 300))
                )
                return
            if attempt < cfg.max_attempts and (err.retryable or err.status >= 500):
                await msg.nak(delay=backoff_delay(attempt, cfg.backoff, 300))
                return
            log.warning("cron %s: firing dropped after %d attempts: %r", tid, attempt, err)
            await msg.term()
            return
        await msg.ack()


async def fire_now(client: Client, tid: str, function_id: str) -> Fired:
    """Publish a tick for a cron trigger, which the shared consumer turns into one call."""
    store = await client.bucket(TRIGGERS_BUCKET, history=5)
    spec: TriggerSpec | None = None
    if tid:
        raw: Any = await store.get(f"cron.{tid}", Any)
        spec = msgspec.convert(raw, TriggerSpec) if raw is not None else None
    elif function_id:
        for key in await store.keys("cron."):
            raw = await store.get(key, Any)
            if raw is not None and raw.get("function_id") == function_id:
                spec = msgspec.convert(raw, TriggerSpec)
                break
    else:
        raise FunctionError("BAD_REQUEST", "give the cron trigger's id or function_id", field="id")
    if spec is None:
        raise FunctionError("NOT_FOUND", f"no cron trigger {tid or function_id}")
    cfg = msgspec.convert(spec.config, CronConfig)
    js = client.nc.jetstream()
    await ensure_cron_stream(client)
    ack = await js.publish(
        TICK + spec.id, msgspec.json.encode(cfg.payload), headers={"Cron-Manual": "true"}
    )
    return Fired(spec.id, ack.seq)
