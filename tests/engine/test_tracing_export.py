"""Span export: OTLP/HTTP to a collector when OTEL_EXPORTER_OTLP_ENDPOINT is set, sampling
at the root, and failed spans kept even when their trace was not sampled."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec
import nats
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from engine import Client, FunctionError, _tracing
from engine.server import NatsServer
from engine.tracing import TRACES_SUBJECT, SpanRecord
from tests.fixtures import eventually


class Collector:
    """A local OTLP/HTTP receiver: what an OpenTelemetry collector would be sent."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path == "/v1/traces":
                    req = ExportTraceServiceRequest()
                    req.ParseFromString(body)
                    collector.requests.append(req)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list[Any]:
        return [
            s
            for r in self.requests
            for rs in r.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
        ]

    def services(self) -> set[str]:
        return {
            a.value.string_value
            for r in self.requests
            for rs in r.resource_spans
            for a in rs.resource.attributes
            if a.key == "service.name"
        }


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.server.shutdown()


async def test_worker_spans_reach_an_otlp_collector_with_their_parent(
    client: Client, spawn: Any, collector: Collector
) -> None:
    spawn(
        "workers.example",
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
            "ENGINE_TRACING": "on",
            "ENGINE_TRACE_SAMPLING": "1.0",
        },
    )
    root = _tracing.start("test root", _tracing.SpanKind.INTERNAL)
    token = _tracing.attach(root)
    try:
        headers: dict[str, str] = {}
        _tracing.inject(headers, root)
        await client.call("example::echo", {"text": "hi"}, timeout=5, headers=headers)
    finally:
        _tracing.detach(token)

    async def exported() -> list[Any]:
        got = [s for s in collector.spans() if s.name == "example::echo"]
        assert got, "no span exported yet"
        return got

    (span,) = await eventually(exported, timeout=10)
    assert span.trace_id.hex() == root.trace_id
    assert span.parent_span_id.hex() == root.span_id
    assert span.kind == span.SPAN_KIND_SERVER
    assert span.end_time_unix_nano >= span.start_time_unix_nano > 0
    attrs = {a.key: a.value.string_value for a in span.attributes}
    assert attrs["faas.invoked_name"] == "example::echo"
    assert "example" in collector.services()


async def test_unsampled_traces_are_dropped_but_their_errors_are_kept(
    nats_server: NatsServer, spawn: Any
) -> None:
    nc = await nats.connect(nats_server.url)
    got: list[SpanRecord] = []

    async def on_batch(msg: Any) -> None:
        got.extend(msgspec.json.decode(msg.data, type=list[SpanRecord]))

    await nc.subscribe(f"{TRACES_SUBJECT}.>", cb=on_batch)
    spawn("workers.example", env={"ENGINE_TRACING": "on", "ENGINE_TRACE_SAMPLING": "0"})
    client = Client(nc)
    try:
        for _ in range(5):
            await client.call("example::echo", {"text": "fine"}, timeout=5)
        with pytest.raises(FunctionError):
            await client.call("example::fail", {"code": "CONFLICT", "message": "x"}, timeout=5)

        async def errors() -> list[SpanRecord]:
            failed = [s for s in got if s.name == "example::fail" and s.status == "ERROR"]
            assert failed, "the failed call's span was not exported"
            return failed

        (failed,) = await eventually(errors, timeout=10)
        assert failed.attributes["error.type"] == "CONFLICT"
        await asyncio.sleep(1.0)  # a full flush interval: nothing else may arrive
        assert [s.name for s in got if s.service == "example"] == ["example::fail"]
    finally:
        await nc.close()
