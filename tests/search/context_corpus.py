"""A fixed corpus and request set for pinning `mem::context` (and the index's project
profile) across implementations.

Plain data only (events as JSON-able dicts), as in `ranking_corpus.py`:
`tests/search/fixtures/context_blocks.json` was written by the context that built a record
for every observation of the project and sorted them (`python -m tests.search.context_corpus
OUT` on that version), and tests/search/test_context_blocks.py holds the current one to it.

The corpus is made to reach the corners of the old ordering: equal importances and equal
timestamps (ties keep slot order), timestamps written in different forms, memories without
a project (global) and pinned ones, superseded memories, summaries written again for their
session, revised observations, forgotten records (the best ones of a project included, and
the first records naming an entity), several agents, and one project large enough that
every bounded list of it overflows and one session of it outranks the rest.
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
         "src/queue/worker.rs", "docs/deploy.md", "Makefile", "README.md", "src/ui/App.tsx",
         "lib/util.js", "pkg/api/server.go", "setup.cfg"]  # fmt: skip
TYPES = ["error", "decision", "file_edit", "file_write", "command", "file_read", "prompt"]
AGENTS = ["", "a1", "a2"]
PROJECTS = ["p0", "p1", "big"]
STAMPS = ("{d}T{h:02d}:00:00Z", "{d}T{h:02d}:00:00.000Z", "{d}T{h:02d}:00:00+00:00")
TYPE_LETTERS = {"slots": "x", "pinned": "p", "memory": "m", "profile": "f", "summary": "s",
                "observation": "o"}  # fmt: skip
CHECKPOINTS = (400, 1800)
"""Events applied when the context is also pinned part way (and at the end)."""


def _stamp(rnd: random.Random, month: int) -> str:
    day = f"2026-{month:02d}-{rnd.randint(1, 4):02d}"
    return rnd.choice(STAMPS).format(d=day, h=rnd.randint(8, 10))


def events(seed: int = 43) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    obs: list[str] = []
    mems: list[str] = []
    written: dict[str, dict[str, Any]] = {}

    def observation(i: int, project: str, session: str, *, importance: int | None = None,
                    month: int = 1, agent: str | None = None) -> dict[str, Any]:  # fmt: skip
        text = " ".join(rnd.choices(WORDS, k=rnd.randint(3, 9)))
        oid = f"o{i}"
        obs.append(oid)
        written[oid] = {"type": "observation.added", "observation": {
            "id": oid, "session_id": session, "project": project,
            "agent_id": rnd.choice(AGENTS) if agent is None else agent,
            "hook_type": "post_tool_use", "timestamp": _stamp(rnd, month),
            "type": rnd.choice(TYPES), "title": f"{rnd.choice(WORDS)} {text[:30]}",
            "narrative": text, "concepts": rnd.sample(WORDS, rnd.randint(0, 3)),
            "files": rnd.sample(FILES, rnd.randint(0, 3)), "tool_name": "Edit",
            "importance": rnd.randint(3, 8) if importance is None else importance, "raw": text,
        }}  # fmt: skip
        return written[oid]

    for i in range(2400):
        r = rnd.random()
        project = "big" if i % 2 == 0 else rnd.choice(PROJECTS[:2])
        session = f"{project}-s{rnd.randint(0, 14)}"
        if r < 0.06:
            text = " ".join(rnd.choices(WORDS, k=rnd.randint(3, 8)))
            mid = f"m{i}"
            memory: dict[str, Any] = {
                "id": mid, "content": text, "title": text[:30] if rnd.random() < 0.8 else "",
                "type": rnd.choice(["fact", "pattern", "decision"]),
                "project": "" if rnd.random() < 0.25 else project,
                "agent_id": rnd.choice(AGENTS), "pinned": rnd.random() < 0.3,
                "concepts": rnd.sample(WORDS, 2), "files": rnd.sample(FILES, 1),
                "created_at": _stamp(rnd, 2),
            }  # fmt: skip
            if mems and rnd.random() < 0.2:
                memory["supersedes"] = rnd.choice(mems)
                memory["updated_at"] = _stamp(rnd, 3)
            mems.append(mid)
            out.append({"type": "memory.added", "memory": memory})
        elif r < 0.10:
            text = " ".join(rnd.choices(WORDS, k=rnd.randint(3, 8)))
            out.append({"type": "summary.added", "summary": {
                "session_id": session, "project": project, "agent_id": rnd.choice(AGENTS),
                "title": text[:40], "narrative": text, "decisions": [text[:20]],
                "files": rnd.sample(FILES, 2), "concepts": rnd.sample(WORDS, 2),
                "created_at": _stamp(rnd, 4),
            }})  # fmt: skip
        elif r < 0.12 and obs:
            gone = rnd.sample(obs, min(len(obs), rnd.randint(1, 6)))
            if mems and rnd.random() < 0.3:
                gone.append(rnd.choice(mems))
            out.append({"type": "records.removed", "ids": gone, "reason": "forget"})
        elif r < 0.14 and obs:  # the compression model's rewrite of an earlier record
            was = written[rnd.choice(obs)]["observation"]
            text = " ".join(rnd.choices(WORDS, k=rnd.randint(3, 9)))
            out.append({"type": "observation.added", "observation": {
                **was, "title": f"revised {text[:30]}", "narrative": text, "revision": 1,
                "importance": rnd.randint(3, 9), "concepts": rnd.sample(WORDS, 2),
            }})  # fmt: skip
        else:
            out.append(observation(i, project, session))
    # One session of `big` that outranks everything before it, then the best records of
    # `big` forgotten: every bounded list of the project has to be made again.
    for i in range(2400, 2800):
        out.append(observation(i, "big", "big-long", importance=rnd.randint(8, 10), month=5))
    best = [e["observation"]["id"] for e in out[-400:]][::3]
    out.append({"type": "records.removed", "ids": best, "reason": "forget"})
    for i in range(2800, 2830):
        out.append(observation(i, "big", "big-after", importance=9, month=6))
    return out


def requests() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for project in [*PROJECTS, "", "nope"]:
        for agent in (None, "", "a1"):
            for session in ("", "fresh", "big-long", f"{project}-s3"):
                for budget, query in ((2000, ""), (300, ""), (100_000, ""), (2000, "cache")):
                    req: dict[str, Any] = {"sessionId": session, "project": project,
                                           "budget": budget, "query": query}  # fmt: skip
                    if agent is not None:
                        req["agentId"] = agent
                    out.append(req)
    return out


def profiles() -> list[dict[str, Any]]:
    return [
        {"project": p, **({"agentId": a} if a is not None else {})}
        for p in [*PROJECTS, "", "nope"]
        for a in (None, "", "a1")
    ]


async def pinned(service: Any) -> dict[str, Any]:
    """Every request's context and every profile, as JSON-able data."""
    import msgspec

    from functions.search.wire import ContextIn, ProfileIn

    contexts = []
    for req in requests():
        out = await service.context(msgspec.convert(req, ContextIn))
        contexts.append(msgspec.to_builtins(out))
    profs = []
    for req in profiles():
        out = await service.profile(msgspec.convert(req, ProfileIn))
        profs.append(msgspec.to_builtins(out))
    return {"contexts": contexts, "profiles": profs}


def compact(pins: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The pins with each distinct block text stored once: a reply is its tokens and its
    blocks, each its type's letter and its text's number (`o12 s3`); the context is the
    blocks joined in their frame."""
    texts: dict[str, int] = {}
    out: dict[str, Any] = {"texts": [], "at": {}}
    for at, pin in pins.items():
        replies = []
        for reply in pin["contexts"]:
            blocks = " ".join(
                f"{TYPE_LETTERS[b['type']]}{texts.setdefault(b['content'], len(texts))}"
                for b in reply["blocks"]
            )
            replies.append([reply["tokens"], blocks])
        out["at"][at] = {"contexts": replies, "profiles": pin["profiles"]}
    out["texts"] = list(texts)
    return out


async def written() -> dict[str, Any]:
    """The fixture: the pins at each checkpoint and at the end."""
    import msgspec

    from functions.kernel.records import MemEvent
    from functions.search.feeder import IndexHolder
    from functions.search.index import SearchIndex
    from functions.search.search_service import SearchService

    service = SearchService(IndexHolder(SearchIndex(), load_embedder=False))
    out: dict[str, Any] = {}
    evs = events()
    for i, ev in enumerate(evs, 1):
        service.holder.index.apply(msgspec.convert(ev, MemEvent), seq=i)
        if i in CHECKPOINTS or i == len(evs):
            out[str(i)] = await pinned(service)
    return compact(out)


def main() -> None:
    import asyncio

    with open(sys.argv[1], "w") as f:
        json.dump(asyncio.run(written()), f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
