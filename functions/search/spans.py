"""A span per retrieval stream (BM25, session, vectors, time, graph) and for their fusion,
so a search's trace shows where its time went. Only inside a recorded trace: a search the
console or a sampled request did not trace pays one context lookup per stream."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from engine import tracing


@contextlib.contextmanager
def stream_span(name: str, **attributes: Any) -> Iterator[Any]:
    """`search.<name>` as a child of the current span; yields it (None when untraced) so
    the caller can add what it found (`search.results`)."""
    ctx = tracing.current_context()
    if ctx is None or not ctx.sampled or not tracing.enabled():
        yield None
        return
    span = tracing.start(f"search.{name}", tracing.SpanKind.INTERNAL, attributes)
    try:
        yield span
    finally:
        span.end()


def found(span: Any, ranked: list[int]) -> list[int]:
    """`ranked`, noted on the span as its result count."""
    if span is not None:
        span.set_attribute("search.results", len(ranked))
    return ranked
