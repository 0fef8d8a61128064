"""Synthetic compression on the write path: µs per `compress` call over a fixed mix of
hook payloads shaped like the hosts' (Claude Code's Bash / Edit / Read / Grep responses as
the hook sends them, JSON text; plain test logs; prompts), 1–8 KB.

    .venv/bin/python -m ops.bench.compress            # 3,000 payloads x 5 rounds
    .venv/bin/python -m ops.bench.compress --quick    # 1,000 payloads x 3 rounds

The last line is one JSON object: us_per_call (median of the rounds), and per kind.
"""

# ruff: noqa: E402

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere, as the README shows

from functions.memory.compress import compress
from ops.bench.harness import emit, median, payload_template


def _log(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    while sum(map(len, lines)) < size:
        n = rng.randint(1, 400)
        lines.append(
            rng.choice(
                [
                    f"test/unit/refresh_{n}.test.ts > refreshes token {n} ✓ ({n} ms)\n",
                    f"src/components/Button{n}.spec.tsx:{n}:7 - error TS2345: Argument\n",
                    f'  File "src/core/engine_{n}.py", line {n}, in run\n',
                    f"INFO worker-{n} processed batch {n} in {n / 7:.2f} ms\n",
                ]
            )
        )
    return "".join(lines)


def payloads(n: int, seed: int = 7) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, hook, data) triples, deterministic for a seed."""
    rng = random.Random(seed)
    out: list[tuple[str, str, dict[str, Any]]] = []
    for k in range(n):
        kind = ("bash", "edit", "read", "grep", "log", "prompt")[k % 6]
        size = rng.randint(1024, 8 * 1024)
        if kind == "bash":
            resp = {"stdout": _log(rng, size), "stderr": "", "interrupted": False,
                    "isImage": False}  # fmt: skip
            data = {"tool_name": "Bash",
                    "tool_input": {"command": f"npm test -- test/refresh_{k}.test.ts",
                                   "description": "Run the refresh tests"},
                    "tool_output": json.dumps(resp)}  # fmt: skip
        elif kind == "edit":
            path = f"src/auth/refresh_{k}.ts"
            old, new = _log(rng, size // 4), _log(rng, size // 4)
            resp = {"filePath": path, "oldString": old, "newString": new,
                    "structuredPatch": [{"oldStart": 1, "lines": new.splitlines()[:20]}],
                    "userModified": False, "replaceAll": False}  # fmt: skip
            data = {"tool_name": "Edit",
                    "tool_input": {"file_path": path, "old_string": old, "new_string": new},
                    "tool_output": json.dumps(resp)}  # fmt: skip
        elif kind == "read":
            path = f"src/types/index_{k}.d.ts"
            resp = {"type": "text", "file": {"filePath": path, "content": _log(rng, size),
                                             "numLines": 80, "startLine": 1, "totalLines": 80}}  # fmt: skip
            data = {"tool_name": "Read", "tool_input": {"file_path": path},
                    "tool_output": json.dumps(resp)}  # fmt: skip
        elif kind == "grep":
            data = {"tool_name": "Grep",
                    "tool_input": {"pattern": f"refresh{k}", "path": "src", "output_mode": "content"},
                    "tool_output": _log(rng, size)}  # fmt: skip
        elif kind == "log":
            data = payload_template(k, rng)["data"]
        else:
            data = {"prompt": f"Why does test/refresh_{k}.test.ts fail after the token "
                              f"rotation? The Dockerfile and Makefile changed too.\n"
                              + _log(rng, size // 8)}  # fmt: skip
            out.append((kind, "prompt_submit", data))
            continue
        out.append((kind, "post_tool_use", data))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1,000 payloads x 3 rounds")
    args = ap.parse_args()
    if args.quick:
        args.n, args.rounds = min(args.n, 1000), min(args.rounds, 3)
    corpus = payloads(args.n)
    for _kind, hook, data in corpus[:200]:  # warm the caches and the regex engines
        compress(hook, data)
    rounds: list[float] = []
    by_kind: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.rounds):
        spent: dict[str, float] = defaultdict(float)
        t_all = time.perf_counter()
        for kind, hook, data in corpus:
            t = time.perf_counter()
            compress(hook, data)
            spent[kind] += time.perf_counter() - t
        rounds.append((time.perf_counter() - t_all) / len(corpus) * 1e6)
        per = len(corpus) / 6
        for kind, s in spent.items():
            by_kind[kind].append(s / per * 1e6)
    emit(
        {
            "bench": "compress",
            "payloads": len(corpus),
            "us_per_call": round(median(rounds), 1),
            **{f"{k}_us": round(median(v), 1) for k, v in sorted(by_kind.items())},
        }
    )


if __name__ == "__main__":
    main()
