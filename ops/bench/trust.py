"""The poisoning check's cost per observation next to today's scrubber, in one run.

Both peers handle the same hook payloads, in alternating rounds so machine noise hits both
alike: the check is what the write path adds (`classify_value` over the event's data, then
`sanitize_value`), the peer what it paid already (`scrub_value`). `ratio_<mix>` is check /
scrub: the write path now pays 1 + ratio of what scrubbing cost it. Three mixes:
  - mix: the ingest benchmark's payloads (1–8 KB tool outputs: logs, code, tracebacks);
  - code: this repository's own source files read back as 1–8 KB `Read` outputs (dense in
    the rules' words: agent, assistant, system, ignore, token);
  - corpus: the poisoning corpus (tests/kernel/trust_corpus.py) as tool outputs judged as
    their sources, the poisoned ones inside a 4 KB log.
Also counted: records held in the mix and the code (a false-positive gauge: neither holds
an attack) and the corpus's caught and benign-held rates.

    python ops/bench/trust.py [--quick]

Last line: JSON with us_per_obs_<mix>_{check,scrub}, ratio_<mix>, held_<mix>, and the
corpus rates. --quick takes under a minute.
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from functions.kernel.scrub import scrub_value
from functions.kernel.trust.classify import classify_value
from functions.kernel.trust.invisible import sanitize_value
from functions.kernel.trust.sources import source_of_hook
from ops.bench.harness import emit, machine, payload_mixes
from tests.kernel.trust_corpus import CASES, HOLDOUT, HOLDOUT_2

Payload = dict[str, Any]


def check(p: Payload) -> bool:
    """What the write path adds for one event: its words judged, then sanitized."""
    data = p["data"]
    verdict = classify_value(data, p.get("source") or source_of_hook(p["hookType"], data))
    sanitize_value(data)
    return verdict.suspect


def scrub(p: Payload) -> bool:
    scrub_value(p["data"])
    return False


def corpus_payloads() -> tuple[list[Payload], list[bool]]:
    rng = random.Random(41)
    log = "".join(
        f"2026-03-04T10:{rng.randint(10, 59)}:{rng.randint(10, 59)}Z build step {i} ok\n"
        for i in range(120)
    )[:4096]
    out, expected = [], []
    for k, c in enumerate([*CASES, *HOLDOUT, *HOLDOUT_2]):
        text = f"{log}\n{c.text}\n{log[:512]}" if c.expected else c.text
        data = {"tool_name": c.source.tool or "x", "tool_input": {"id": k}, "tool_output": text}
        out.append({"hookType": "post_tool_use", "data": data, "source": c.source})
        expected.append(c.expected)
    return out, expected


def per_obs_us(f: Callable[[Payload], bool], payloads: list[Payload], repeat: int) -> float:
    """CPU microseconds per payload (process time: a shared machine's other work is not
    counted, its cache pressure still is)."""
    t0 = time.process_time()
    for _ in range(repeat):
        for p in payloads:
            f(p)
    return (time.process_time() - t0) / (repeat * len(payloads)) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds, repeat, n = (7, 3, 48) if args.quick else (21, 5, 96)
    data = payload_mixes(n)
    corpus, expected = corpus_payloads()
    sets = {"mix": data["mix"], "code": data["code"], "corpus": corpus}
    figures: dict[str, Any] = {"rounds": rounds, **machine()}
    for name, payloads in sets.items():
        for f in (check, scrub):  # warm-up: automata, caches
            per_obs_us(f, payloads, 1)
        times: dict[str, list[float]] = {"check": [], "scrub": []}
        for _ in range(rounds):
            times["check"].append(per_obs_us(check, payloads, repeat))
            times["scrub"].append(per_obs_us(scrub, payloads, repeat))
        c, s = statistics.median(times["check"]), statistics.median(times["scrub"])
        figures[f"us_per_obs_{name}_check"] = round(c, 2)
        figures[f"us_per_obs_{name}_scrub"] = round(s, 2)
        figures[f"ratio_{name}"] = round(c / s, 2)
        print(f"{name:7s} check {c:8.2f} µs/obs   scrub {s:8.2f} µs/obs   ratio {c / s:5.2f}")
    figures["held_mix"] = sum(check(p) for p in data["mix"])
    figures["held_code"] = sum(check(p) for p in data["code"])
    figures["observations_per_mix"] = n
    held = [check(p) for p in corpus]
    poisoned = sum(expected)
    figures["corpus_caught"] = round(
        sum(h and e for h, e in zip(held, expected, strict=True)) / poisoned, 3
    )
    figures["corpus_benign_held"] = round(
        sum(h and not e for h, e in zip(held, expected, strict=True)) / (len(expected) - poisoned),
        3,
    )
    emit(figures)


if __name__ == "__main__":
    main()
