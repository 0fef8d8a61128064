"""graph/extract's model pass (GRAPH_EXTRACTION_ENABLED=true, a provider at the local
stand-in): the entities and typed relations the model names are stored beside the keyless
ones (upstream's types: decision, person, library ...; relations fixes, uses ...) and a
graph query finds them; a planted secret never reaches the stand-in; a reply that does not
decode, or the flag off, leaves the keyless extraction alone."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest

from engine import Client
from functions.graph.ops import ExtractIn, GraphOps
from functions.graph.wire import GraphQueryIn
from tests.fixtures import wire
from tests.models.standin import StandIn, lifecycle_at

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GRAPH = {
    "entities": [
        {"type": "file", "name": "src/pay/refund.py"},
        {"type": "decision", "name": "refunds go through the ledger"},
        {"type": "library", "name": "stripe"},
        {"type": "person", "name": "dana"},
        {"type": "planet", "name": "mars"},
    ],
    "relations": [
        {"type": "uses", "source": "src/pay/refund.py", "target": "stripe", "weight": 0.9},
        {"type": "fixes", "source": "refunds go through the ledger",
         "target": "src/pay/refund.py"},
        {"type": "orbits", "source": "dana", "target": "stripe"},
    ],
}  # fmt: skip
OBS = {"id": "obs_m1", "project": "pay", "title": "Edited src/pay/refund.py",
       "narrative": f"dana moved refunds onto the ledger; token {SECRET}",
       "files": ["src/pay/refund.py"], "timestamp": "2026-03-02T09:00:00Z"}  # fmt: skip


@pytest.fixture
def standin() -> Iterator[StandIn]:
    s = StandIn(reply=lambda _: json.dumps(GRAPH))
    yield s
    s.close()


@pytest.fixture
async def graph(client: Client, standin: StandIn) -> AsyncIterator[Any]:
    async with lifecycle_at(client, standin.url) as svc:
        yield wire(svc)


def query(**w: object) -> GraphQueryIn:
    return msgspec.convert(w, GraphQueryIn)


async def test_the_models_entities_and_relations_are_stored(
    graph: Any, standin: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPH_EXTRACTION_ENABLED", "true")
    out = await GraphOps(graph.svc).extract(msgspec.convert({"observations": [OBS]}, ExtractIn))
    kinds = {(e.type, e.name) for e in out.entities}
    assert {("decision", "refunds go through the ledger"), ("package", "stripe"),
            ("person", "dana"), ("file", "src/pay/refund.py")} <= kinds  # fmt: skip
    assert not any(n == "mars" for _, n in kinds)  # a type upstream does not have: dropped
    assert len(standin.requests) == 1 and SECRET not in standin.requests[0].text

    (decision,) = (await graph.graph_query(query(nodeType="decision")))["nodes"]
    assert decision["sourceObservationIds"] == ["obs_m1"]
    assert [n["name"] for n in (await graph.graph_query(query(nodeType="person")))["nodes"]] == [
        "dana"]  # fmt: skip
    (refund,) = (await graph.graph_query(query(query="refund.py")))["nodes"]
    walk = await graph.graph_query(query(startNodeId=refund["id"], maxDepth=1))
    typed = {(e["type"], e["sourceNodeId"], e["targetNodeId"]) for e in walk["edges"]}
    ids = {n["name"]: n["id"] for n in walk["nodes"]}
    assert ("uses", refund["id"], ids["stripe"]) in typed
    assert ("fixes", decision["id"], refund["id"]) in typed
    assert not any(t == "orbits" for t, _, _ in typed)


async def test_a_malformed_reply_or_the_flag_off_keeps_the_keyless_extraction(
    graph: Any, standin: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    ops = GraphOps(graph.svc)
    req = msgspec.convert({"observations": [OBS]}, ExtractIn)
    out = await ops.extract(req)  # the flag is off: no call
    assert standin.requests == [] and out.nodes_added >= 1
    monkeypatch.setenv("GRAPH_EXTRACTION_ENABLED", "true")
    standin.reply = lambda _: "<entity type='person'>dana</entity>"
    out = await ops.extract(req)
    assert len(standin.requests) == 1
    assert {e.type for e in out.entities} <= {"file", "symbol", "concept", "error", "package",
                                               "command"}  # fmt: skip
    assert (await graph.graph_query(query(nodeType="person")))["nodes"] == []
