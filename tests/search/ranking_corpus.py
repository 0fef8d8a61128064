"""A fixed corpus and query set for pinning rankings across index layouts.

Plain data only (events as JSON-able dicts), so the same corpus can be fed to an index of
another version of this code: `tests/search/fixtures/rankings.json` was written this way by
the index before its per-document tables were packed (`python -m tests.search.ranking_corpus
OUT` with that version on PYTHONPATH), and tests/search/test_compact_rankings.py holds the
current index to it.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

WORDS = (
    "cache timeout auth login parser config deploy docker test flaky retry queue index "
    "webhook signature token refresh pagination migration schema rollback worker pool "
    "latency memory leak socket handshake"
).split()
FILES = ["src/app/main.py", "src/auth/login.ts", "src/db/pool.go", "tests/test_cache.py",
         "src/queue/worker.rs", "docs/deploy.md"]  # fmt: skip
ERRORS = ["E0425", "TS2345", "KeyError: 'user_id'", "ECONNREFUSED", "panic: index out of range"]
QUERIES = [
    "cache timeout", "auth login", "flaky test retry", "src/app/main.py", "deploy docker",
    "E0425", "webhook signature token", "memory leak in the worker pool", "schema migration",
    "login.ts", "refresh token pagination", "what broke the handshake", "KeyError user_id",
    "rollback", "latency socket", "queue worker.rs", "docs", "parser config test",
]  # fmt: skip
PROJECTS = [None, "p0", "p1", "p2"]


def events(n: int = 1500, seed: int = 11) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(n):
        text = " ".join(rnd.choices(WORDS, k=rnd.randint(4, 14)))
        project = f"p{i % 3}"
        session = f"s{i % 23}"
        day = 1 + i % 28
        if i % 29 == 7:
            out.append({"type": "records.removed", "ids": [f"o{i - 5}", f"m{i - 18}"],
                        "reason": "forget"})  # fmt: skip
        elif i % 19 == 0:
            memory: dict[str, Any] = {"id": f"m{i}", "content": text, "title": text[:40],
                                      "project": "" if i % 38 == 0 else project,
                                      "concepts": rnd.sample(WORDS, 2), "files": rnd.sample(FILES, 1),
                                      "created_at": f"2026-02-{day:02d}T09:00:00Z"}  # fmt: skip
            if i >= 38 and i % 2 == 0:
                memory["supersedes"] = f"m{i - 38}"
            out.append({"type": "memory.added", "memory": memory})
        elif i % 31 == 0:
            out.append({"type": "summary.added", "summary": {
                "session_id": session, "project": project, "title": text[:50],
                "narrative": text, "decisions": [text[:20]], "files": rnd.sample(FILES, 2),
                "concepts": rnd.sample(WORDS, 3), "created_at": f"2026-03-{day:02d}T18:00:00Z",
            }})  # fmt: skip
        else:
            err = rnd.choice(ERRORS) if rnd.random() < 0.15 else ""
            files = rnd.sample(FILES, rnd.randint(0, 2))
            out.append({"type": "observation.added", "observation": {
                "id": f"o{i}", "session_id": session, "project": project,
                "agent_id": "a1" if i % 5 == 0 else "", "hook_type": "post_tool_use",
                "timestamp": f"2026-01-{day:02d}T{i % 24:02d}:00:00Z",
                "type": "error" if err else "file_edit", "title": f"{rnd.choice(WORDS)} {text[:30]}",
                "narrative": f"{text} {err}".strip(), "facts": [f"error: {err}"] if err else [],
                "concepts": rnd.sample(WORDS, 2), "files": files, "tool_name": "Edit",
                "importance": 1 + i % 9, "raw": text,
            }})  # fmt: skip
    return out


def rankings(index: Any) -> list[dict[str, Any]]:
    """For every query x project: the fused hits (id, score, matched) and each stream's
    ranked slots before fusion."""
    out = []
    for q in QUERIES:
        for p in PROJECTS:
            hits = index.search(q, project=p, limit=20)
            streams = index.streams(q, project=p, limit=20)
            out.append({
                "query": q, "project": p,
                "hits": [[h.id, h.score, sorted(h.matched)] for h in hits],
                "streams": {k: list(v) for k, v in sorted(streams.items())},
            })  # fmt: skip
    return out


def build(index_cls: Any, event_type: Any) -> Any:
    import msgspec

    index = index_cls()
    for i, ev in enumerate(events(), 1):
        index.apply(msgspec.convert(ev, event_type), seq=i)
    return index


def main() -> None:
    from functions.kernel.records import MemEvent
    from functions.search.index import SearchIndex

    json.dump(rankings(build(SearchIndex, MemEvent)), open(sys.argv[1], "w"))


if __name__ == "__main__":
    main()
