"""A worker: a process that serves named functions on the bus as a NATS micro service."""

from __future__ import annotations

import asyncio
import bisect
import inspect
import logging
import re
import time
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.micro import add_service
from nats.micro.request import Request
from nats.micro.service import Service

from engine import _codec, _natspy, _tracing
from engine._client import Client, LocalCall
from engine._context import Context
from engine._errors import FunctionError, invalid_request
from engine._natspy import NO_COUNTERS, EndpointCounters
from engine._operations import Http, NoArgs, Tool, declared
from engine._tracing import SpanKind
from engine._triggers import TRIGGERS_BUCKET, TriggerSpec, trigger_spec
from engine.protocol import (
    ERROR_CODE_HEADER,
    ERROR_HEADER,
    HDR_COERCE,
    HDR_DEADLINE,
    HDR_TRIGGER,
    MAX_JSON_DEPTH,
    maybe_too_deep,
    parse_deadline,
    subject_for,
    too_deep,
    validate_function_id,
)

log = logging.getLogger("engine.worker")

Handler = Callable[[Any, Context], Awaitable[Any]]
Hook = Callable[[Client], Awaitable[None]]

DEADLINE_SWEEP = 0.02
BUCKETS_MS = (0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)
_BUCKETS_NS = tuple(int(b * 1e6) for b in BUCKETS_MS)


@dataclass
class FunctionSpec:
    id: str
    handler: Handler
    request: Any
    response: Any
    description: str = ""
    timeout: float = 30.0
    """Longest a call may run when the caller sent no earlier deadline."""
    http: Http | None = None
    tool: Tool | None = None

    def schemas(self) -> dict[str, str]:
        """The endpoint's `$SRV.INFO` metadata: what discovery, the OpenAPI document, MCP
        tool lists and the console read of a function."""
        out: dict[str, str] = {"function_id": self.id, "description": self.description}
        for key, tp in (("request_schema", self.request), ("response_schema", self.response)):
            if tp not in (Any, bytes, None):
                try:
                    out[key] = msgspec.json.encode(msgspec.json.schema(tp)).decode()
                except (TypeError, ValueError):
                    pass
        if self.http is not None:
            out["http"] = msgspec.json.encode(self.http).decode()
        if self.tool is not None:
            tool = msgspec.structs.replace(
                self.tool, description=self.tool.description or self.description
            )
            out["tool"] = msgspec.json.encode(tool).decode()
        return out


@dataclass
class _Stats:
    errors: int = 0
    last_error: str = ""
    busy_ns: int = 0
    bytes_out: int = 0
    """Bytes of the replies it sent (a reader can tell how much its callers got)."""
    # Duration histogram: counts[i] calls took <= BUCKETS_MS[i] (the last bucket: more).
    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS_MS) + 1))

    def data(self, function_id: str) -> dict[str, Any]:
        return {
            "function_id": function_id,
            "duration_buckets_ms": list(BUCKETS_MS),
            "duration_counts": list(self.counts),
            "busy_ms": self.busy_ns / 1e6,
            "calls": sum(self.counts),
            "errors": self.errors,
            "last_error": self.last_error,
            "bytes_out": self.bytes_out,
        }


@dataclass
class Worker:
    """Declare functions with `@worker.function(id)`, then `worker.run()` in a process."""

    name: str
    version: str = "0.1.0"
    description: str = ""
    functions: dict[str, FunctionSpec] = field(default_factory=dict)
    drain_timeout: float = 25.0

    def __post_init__(self) -> None:
        self._start_hooks: list[Hook] = []
        self._drain_hooks: list[Hook] = []
        self._stop_hooks: list[Hook] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._deadlines: dict[asyncio.Task[None], float] = {}
        self._expired: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._calls_arrived = asyncio.Event()
        self._service: Service | None = None
        self._client: Client | None = None
        self._subs: list[Any] = []
        self._stats: dict[str, _Stats] = {}
        self._counters: dict[str, EndpointCounters] = {}
        self._by_endpoint: dict[str, str] = {}
        self._dispatchers: dict[str, Callable[[Any], Awaitable[asyncio.Task[None]]]] = {}
        self._draining = False
        self.triggers: list[TriggerSpec] = []

    # ---- declaration -------------------------------------------------------------
    def function(
        self,
        function_id: str,
        *,
        description: str = "",
        timeout: float = 30.0,
        request: Any = None,
        response: Any = None,
        http: Http | None = None,
        tool: Tool | None = None,
    ) -> Callable[[Handler], Handler]:
        """Register `async def handler(req, ctx) -> resp`; types come from its annotations.
        `http` gives it a REST route (an `http` trigger stored when the worker starts),
        `tool` makes it an MCP tool; both are published with its schemas."""
        validate_function_id(function_id)

        def deco(fn: Handler) -> Handler:
            hints = typing.get_type_hints(fn, include_extras=True)
            params = [k for k in hints if k != "return"]
            req_t = request if request is not None else (hints[params[0]] if params else Any)
            resp_t = response if response is not None else hints.get("return", Any)
            if function_id in self.functions:
                raise ValueError(f"function {function_id} registered twice in worker {self.name}")
            spec = FunctionSpec(
                function_id,
                fn,
                req_t,
                resp_t,
                description or (fn.__doc__ or "").strip(),
                timeout,
                http,
                tool,
            )
            self.functions[function_id] = spec
            if http is not None:
                # A readable trigger id (the console's Triggers page): one route per function.
                self.trigger(
                    "http",
                    function_id,
                    id=function_id.replace("::", "-"),
                    **http.trigger_config(spec.description, timeout),
                )
            return fn

        return deco

    def serve(self, service: object) -> None:
        """Register every method of `service` marked with `engine.operation`."""
        for decl, method in declared(service):
            req_t, resp_t, handler = _adapt(method)
            self.function(
                decl.function_id,
                description=decl.description,
                timeout=decl.timeout,
                request=req_t,
                response=resp_t,
                http=decl.http,
                tool=decl.tool,
            )(handler)

    def trigger(self, kind: str, function_id: str, **config: Any) -> TriggerSpec:
        """Bind an event source to a function, e.g. `worker.trigger("cron", "greet::daily",
        schedule="@daily")`. Stored in KV when the worker starts."""
        spec = trigger_spec(kind, function_id, **config)
        spec.worker = self.name
        self.triggers.append(spec)
        return spec

    def on_start(self, fn: Hook) -> Hook:
        self._start_hooks.append(fn)
        return fn

    def on_drain(self, fn: Hook) -> Hook:
        """Run `fn` when the worker starts to drain, before it waits for the calls in flight:
        a long call can end early (between its batches) instead of holding the stop."""
        self._drain_hooks.append(fn)
        return fn

    def on_stop(self, fn: Hook) -> Hook:
        self._stop_hooks.append(fn)
        return fn

    # ---- lifecycle ---------------------------------------------------------------
    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError(f"worker {self.name} is not started")
        return self._client

    async def start(self, nc: NATS, client: Client | None = None) -> None:
        """Serve on `nc`; workers of one process pass one shared `client`, so their calls to
        each other's functions run in-process."""
        self._client = client or Client(nc)
        self._sweeper = asyncio.get_running_loop().create_task(self._enforce_deadlines())
        # Calls this process makes to its own functions run here, without the two bus hops
        # (a trigger hosted in the worker, or one function calling a sibling); available to
        # start hooks already, which run in order after the handlers' own set-up hooks.
        for spec in self.functions.values():
            self._stats[spec.id] = _Stats()
            dispatch = self._dispatchers[spec.id] = self._dispatcher(spec)
            self._client.serve_locally(spec.id, self._local_caller(spec.id, dispatch))
        for hook in self._start_hooks:
            await hook(self._client)
        svc = await add_service(
            nc,
            name=_endpoint_name(self.name),
            version=self.version,
            description=self.description or self.name,
            metadata={"worker": self.name},
            stats_handler=self._endpoint_data,
        )
        self._service = svc
        for spec in self.functions.values():
            name = _endpoint_name(spec.id)
            self._by_endpoint[name] = spec.id
            await svc.add_endpoint(
                name=name,
                subject=subject_for(spec.id),
                queue_group=spec.id,
                handler=_from_request(self._dispatchers[spec.id]),
                metadata=spec.schemas(),
            )
        # Hot path on verified nats-py (engine/_natspy.py): raw messages to our dispatchers.
        # Elsewhere micro's public handler path serves, and its STATS keep its own counts.
        fast = _natspy.fast_endpoints(svc, [self._dispatchers[f] for f in self.functions])
        if fast is not None:
            self._counters = dict(zip(self.functions, fast, strict=True))
            self._subs = _natspy.subscriptions(svc)
        await self._store_triggers()
        await nc.flush()
        log.info("worker %s serving %s", self.name, ", ".join(self.functions) or "no functions")

    async def _store_triggers(self) -> None:
        # Declarations are the truth: what this worker declared earlier and no longer does
        # (a route whose path or function changed in an upgrade) is removed, so no route is
        # left pointing at a function nobody serves.
        store = await self.client.bucket(TRIGGERS_BUCKET, history=5)
        mine = {t.key for t in self.triggers}
        for t in self.triggers:
            await store.put(t.key, t)
        for key in await store.keys():
            if key in mine:
                continue
            raw: Any = await store.get(key, Any)
            if isinstance(raw, dict) and raw.get("worker") == self.name:
                await store.delete(key)

    async def drain(self) -> None:
        """Stop taking calls, finish the ones in flight, then run the stop hooks."""
        if self._draining:
            return
        self._draining = True
        if self._client is not None:
            # From now on a hosted trigger's calls go over the bus, to the other replicas.
            self._client.stop_serving_locally()
        for sub in self._subs:
            try:
                await sub.drain()
            except Exception:  # already closed
                pass
        if not self._subs and self._service is not None:
            # The public path: stopping the service unsubscribes its endpoints.
            try:
                await self._service.stop()
            except Exception:
                pass
        await self._run_hooks(self._drain_hooks, "drain")
        if self._inflight:
            began = time.monotonic()
            log.info(
                "%s: stopping with %d call(s) in flight: %s", self.name, len(self._inflight),
                ", ".join(sorted({t.get_name() for t in self._inflight})),
            )  # fmt: skip
            _done, pending = await asyncio.wait(set(self._inflight), timeout=self.drain_timeout)
            if pending:
                # Named, so a slow stop says which function held it.
                names = sorted({t.get_name() for t in pending})
                log.warning(
                    "%s: %d call(s) still running %.0fs into the stop, cancelled: %s",
                    self.name, len(pending), self.drain_timeout, ", ".join(names),
                )  # fmt: skip
            for t in pending:
                t.cancel()
            log.info("%s: calls in flight ended in %.2fs", self.name, time.monotonic() - began)
        if self._sweeper is not None:
            self._sweeper.cancel()
        await self._run_hooks(self._stop_hooks, "stop")

    async def _run_hooks(self, hooks: list[Hook], what: str) -> None:
        if self._client is None:
            return
        for hook in hooks:
            try:
                await hook(self._client)
            except Exception:
                log.exception("%s hook of %s failed", what, self.name)

    def run(self) -> None:
        """Process entry point: connect from the environment, serve until SIGTERM/SIGINT."""
        from engine._runtime import run_worker

        run_worker(self)

    # ---- serving -----------------------------------------------------------------
    def _local_caller(
        self, function_id: str, dispatch: Callable[[Any], Awaitable[asyncio.Task[None]]]
    ) -> LocalCall:
        subject = subject_for(function_id)

        async def call(data: bytes, headers: dict[str, str]) -> tuple[bytes, dict[str, str]]:
            msg = _LocalMessage(subject, data, headers)
            self._counters.get(function_id, NO_COUNTERS).request()
            task = await dispatch(msg)
            task.add_done_callback(msg.finished)
            return await msg.reply_future

        return call

    def _dispatcher(self, spec: FunctionSpec) -> Callable[[Any], Awaitable[asyncio.Task[None]]]:
        # The micro endpoint awaits this per message in order; spawning a task lets calls
        # run concurrently while the subscription keeps reading.
        loop = asyncio.get_running_loop()
        inflight = self._inflight
        deadlines = self._deadlines
        arrived = self._calls_arrived
        done = self._call_done
        execute = self._execute
        default_timeout = spec.timeout

        async def dispatch(msg: Any) -> asyncio.Task[None]:
            now = time.time()
            limit = now + default_timeout
            if msg.headers:
                caller = parse_deadline(msg.headers.get(HDR_DEADLINE))
                if caller is not None and caller < limit:
                    limit = caller
            task = loop.create_task(execute(spec, msg, now, limit), name=spec.id)
            inflight.add(task)
            if not deadlines:
                arrived.set()
            deadlines[task] = limit
            task.add_done_callback(done)
            return task

        return dispatch

    def _call_done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._deadlines.pop(task, None)
        self._expired.discard(task)

    async def _enforce_deadlines(self) -> None:
        # One sweeper for every call in flight: cheaper than a timer per call, and precise
        # to DEADLINE_SWEEP seconds. An expired call is cancelled and answered 504.
        # Idle, it sleeps until a call arrives: no wakeups when nothing runs (a background
        # service on a laptop, most of its life).
        while True:
            if not self._deadlines:
                self._calls_arrived.clear()
                await self._calls_arrived.wait()
            await asyncio.sleep(DEADLINE_SWEEP)
            now = time.time()
            for task, limit in list(self._deadlines.items()):
                if limit <= now:
                    del self._deadlines[task]
                    self._expired.add(task)
                    task.cancel()

    async def _execute(self, spec: FunctionSpec, msg: Any, now: float, limit: float) -> None:
        started = time.perf_counter_ns()
        headers = msg.headers or {}
        span = None
        token: Any = None
        if _tracing.active:
            span = _tracing.start(
                spec.id,
                SpanKind.SERVER,
                {
                    "faas.invoked_name": spec.id,
                    "faas.trigger": headers.get(HDR_TRIGGER, "other"),
                    "messaging.system": "nats",
                    "messaging.destination.name": msg.subject,
                },
                _tracing.extract(headers),
            )
            token = _tracing.current_parent.set(span)  # attach(), without the call
        try:
            if limit <= now:
                raise FunctionError(
                    "DEADLINE_EXCEEDED", f"{spec.id}: deadline passed before it ran"
                )
            payload = _decode_request(
                msg.data, spec.request, HDR_COERCE in headers if headers else False
            )
            ctx = Context(self.client, spec.id, headers, limit, self.name)
            try:
                result = await spec.handler(payload, ctx)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task not in self._expired:
                    raise  # a real cancellation (shutdown), not our deadline
                task.uncancel()
                raise FunctionError(
                    "DEADLINE_EXCEEDED", f"{spec.id} did not finish before its deadline"
                ) from None
            if msg.reply:
                data = _codec.encode(result)
                self._stats[spec.id].bytes_out += len(data)
                await self._respond(msg, data, None)
        except FunctionError as err:
            self._trace_error(span, spec, msg, err, now)
            await self._reply_error(spec, msg, err)
        except Exception as exc:
            log.exception("function %s failed", spec.id)
            internal = FunctionError("INTERNAL", f"{spec.id} failed: {type(exc).__name__}")
            self._trace_error(span, spec, msg, internal, now)
            await self._reply_error(spec, msg, internal)
        finally:
            if span is not None:
                _tracing.current_parent.reset(token)
                span.end()
            elapsed = time.perf_counter_ns() - started
            st = self._stats[spec.id]
            st.busy_ns += elapsed
            st.counts[bisect.bisect_left(_BUCKETS_NS, elapsed)] += 1
            self._counters.get(spec.id, NO_COUNTERS).busy(elapsed)

    def _trace_error(
        self, span: Any, spec: FunctionSpec, msg: Any, err: FunctionError, started: float
    ) -> None:
        if span is None:
            return
        span.set_attribute("faas.input", _tracing.scrub_payload(msg.data))
        _tracing.fail(span, err.code, err.message)

    async def _reply_error(self, spec: FunctionSpec, msg: Any, err: FunctionError) -> None:
        st = self._stats[spec.id]
        st.errors += 1
        st.last_error = f"{err.code}: {err.message}"
        self._counters.get(spec.id, NO_COUNTERS).error(st.last_error)
        if not msg.reply:
            log.warning("fire-and-forget call of %s failed: %r", spec.id, err)
            return
        try:
            await self._respond(
                msg,
                err.encode(),
                {ERROR_CODE_HEADER: str(err.status), ERROR_HEADER: err.message[:256]},
            )
        except Exception:
            log.warning("could not reply to %s (connection closing)", spec.id)

    async def _respond(self, msg: Any, data: bytes, headers: dict[str, str] | None) -> None:
        if msg.__class__ is Msg:  # off the bus: publish to its reply subject
            await self.client.nc.publish(msg.reply, data, headers=headers)
        else:  # in-process, or micro's public Request
            await msg.respond(data, headers)

    def _endpoint_data(self, ep: Any) -> dict[str, Any]:
        # $SRV.STATS: each endpoint's `data` carries our figures of its calls (they run in
        # their own tasks, so micro's own timing cannot see them): errors, busy time, and a
        # duration histogram.
        fid = self._by_endpoint.get(ep.name)
        return self._stats[fid].data(fid) if fid is not None else {}

    def stats(self) -> dict[str, dict[str, Any]]:
        return {
            k: {"errors": v.errors, "last_error": v.last_error, "busy_ns": v.busy_ns}
            for k, v in self._stats.items()
        }


class _LocalMessage:
    """A call made in this process, shaped like the bus message `_execute` answers: its
    reply (or error reply, with its headers) resolves the caller's future."""

    __slots__ = ("data", "headers", "reply", "reply_future", "subject")

    def __init__(self, subject: str, data: bytes, headers: dict[str, str]) -> None:
        self.subject = subject
        self.data = data
        self.headers = headers
        self.reply = "local"
        self.reply_future: asyncio.Future[tuple[bytes, dict[str, str]]] = (
            asyncio.get_running_loop().create_future()
        )

    async def respond(self, data: bytes, headers: dict[str, str] | None = None) -> None:
        if not self.reply_future.done():
            self.reply_future.set_result((data, headers or {}))

    def finished(self, _task: asyncio.Task[None]) -> None:
        # Cancelled without a reply (the worker is stopping): fail the caller, never hang it.
        if not self.reply_future.done():
            self.reply_future.set_exception(
                FunctionError("UNAVAILABLE", "the worker stopped during the call", retryable=True)
            )


class _RequestMessage:
    """A micro Request (the public handler path) shaped like the bus message `_execute`
    answers."""

    __slots__ = ("_req", "data", "headers", "reply", "subject")

    def __init__(self, req: Request) -> None:
        self._req = req
        self.subject = req.subject
        self.data = req.data
        self.headers = req.headers
        self.reply = "request"

    async def respond(self, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            await self._req.respond(data, headers=headers)
        except Exception:  # fire and forget: nobody to answer
            pass


def _from_request(
    dispatch: Callable[[Any], Awaitable[Any]],
) -> Callable[[Request], Awaitable[None]]:
    async def handler(req: Request) -> None:
        await dispatch(_RequestMessage(req))

    return handler


def _endpoint_name(function_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", function_id.replace("::", "-"))


def _decode_request(data: bytes, type_: Any, coerce: bool = False) -> Any:
    if maybe_too_deep(data):
        try:
            deep = too_deep(_codec.decode(data))
        except RecursionError:
            deep = True
        except msgspec.DecodeError:
            deep = False  # not JSON: the decode below says so
        if deep:
            raise FunctionError(
                "BAD_REQUEST", f"request body nested deeper than {MAX_JSON_DEPTH} levels"
            )
    try:
        if coerce:  # a query string or path parameters: "10" may be an int
            return _codec.decode_lax(data, type_)
        return _codec.decode(data, type_)
    except msgspec.ValidationError as exc:
        # JSON Schema's integer is any number without a fractional part (`5.0` included),
        # which msgspec's strict decoding refuses: such a request is decoded again with
        # integral floats as ints (only then, so the usual path pays nothing).
        if "got `float`" in str(exc):
            try:
                return _codec.decode(_codec.encode(_integral(_codec.decode(data))), type_)
            except (msgspec.ValidationError, msgspec.DecodeError):
                pass
        raise invalid_request(exc) from None
    except msgspec.DecodeError as exc:
        raise invalid_request(exc) from None


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _adapt(method: Callable[..., Awaitable[Any]]) -> tuple[Any, Any, Handler]:
    """(request type, response type, handler(req, ctx)) of a service method taking
    `(req)`, `(req, ctx)` or nothing."""
    hints = typing.get_type_hints(method, include_extras=True)
    params = [
        p
        for p in inspect.signature(method).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    resp_t = hints.get("return", Any)
    if not params:

        async def no_request(req: Any, ctx: Context) -> Any:
            return await method()

        return NoArgs, resp_t, no_request
    req_t = hints.get(params[0].name, Any)
    if len(params) >= 2:
        return req_t, resp_t, method

    async def request_only(req: Any, ctx: Context) -> Any:
        return await method(req)

    return req_t, resp_t, request_only
