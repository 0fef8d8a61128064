"""Ids and KV keys of the knowledge graph (bucket `mem_graph`).

- `n.<nodeId>`: a GraphNode. Its id hashes project, kind and lower-cased name, so the same
  entity named again is the same node, and nothing needs a name index.
- `e.<srcId>.<dstId>.<kind>`: a GraphEdge. A node's edges are found with the subject
  filters `e.<id>.>` (it is the source) and `e.*.<id>.>` (it is the target), server-side,
  without reading the graph. Co-occurrence is undirected: its source is the smaller id.
- `m.<memoryId>`: the nodes and edges a memory made, so a later version superseding it
  knows which edges to close.
- `rm.<seq>`: ids a RecordsRemoved event forgot, until compaction drops them from
  provenance.
- `stats`: GraphStats.
- `purged`: written by compaction after its purges, for the query mirror
  (functions.graph.mirror), which no purge reaches otherwise.
"""

from __future__ import annotations

import hashlib

import msgspec

CO_OCCURS = "co_occurs"
SUPERSEDES = "supersedes"
STATS = "stats"


def node_id(project: str, kind: str, name: str) -> str:
    h = hashlib.sha256(f"{project}\x1f{kind}\x1f{name.lower()}".encode()).hexdigest()
    return f"gn_{h[:24]}"


def node_key(nid: str) -> str:
    return f"n.{nid}"


def edge_key(src: str, dst: str, kind: str) -> str:
    if kind == CO_OCCURS and dst < src:
        src, dst = dst, src
    return f"e.{src}.{dst}.{kind}"


def edge_id(key: str) -> str:
    return "ge_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def parse_edge_key(key: str) -> tuple[str, str, str]:
    """(src, dst, kind) of `e.<src>.<dst>.<kind>`."""
    _, src, dst, kind = key.split(".", 3)
    return src, dst, kind


class MemoryIndex(msgspec.Struct, kw_only=True):
    """`m.<memoryId>`"""

    nodes: list[str]
    edges: list[str]


class Removed(msgspec.Struct, kw_only=True):
    """`rm.<seq>`"""

    ids: list[str]
