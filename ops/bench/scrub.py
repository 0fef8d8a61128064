"""Scrub cost per observation: this tree's scrubber next to a base revision's, in one run.

Both peers scrub the same hook payloads with `scrub_value` (what mem::observe does),
in alternating rounds so machine noise hits both alike. Three payload mixes:
  - mix: the ingest benchmark's payloads (1–8 KB tool outputs: test logs, code lines,
    tracebacks, worker logs), the figure the write path's budget was set on;
  - code: this repository's own source files read back as 1–8 KB `Read` outputs, dense in
    names such as key, token, api, auth (the needles of many rules);
  - secrets: the provider corpus (tests/memory/secret_corpus.py), one sample a payload.
Also counted: the markers each peer leaves in the code mix (a false-positive gauge: the
repository's code holds no secret) and the corpus samples each peer lets through.

    python ops/bench/scrub.py [--quick] [--base main]

Last line: JSON with us_per_obs_<mix>_{base,new} and ratio_<mix> (target: ratio_mix and
ratio_code <= 2).
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from functions.kernel import scrub as new
from ops.bench.harness import emit, payload_mixes
from tests.memory.secret_corpus import SAMPLES


def load_base(rev: str) -> ModuleType:
    """functions/kernel/scrub.py as it is at `rev`, imported under another name."""
    source = subprocess.run(
        ["git", "show", f"{rev}:functions/kernel/scrub.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "scrub_base.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("scrub_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def per_obs_us(module: ModuleType, payloads: list[dict[str, Any]], repeat: int) -> float:
    # the short-string cache is part of the design: keep it warm, as in a running worker
    scrub_value = module.scrub_value
    t0 = time.perf_counter()
    for _ in range(repeat):
        for p in payloads:
            scrub_value(p)
    return (time.perf_counter() - t0) / (repeat * len(payloads)) * 1e6


def markers(module: ModuleType, payloads: list[dict[str, Any]]) -> int:
    return sum(repr(module.scrub_value(p)).count("[REDACTED") for p in payloads)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--base", default="main", help="the revision to compare with")
    args = ap.parse_args()
    rounds, repeat, n = (5, 3, 48) if args.quick else (15, 5, 96)
    base = load_base(args.base)
    data = payload_mixes(n)
    figures: dict[str, Any] = {"base": args.base, "rules": len(new.RULE_SET.rules)}
    for name, payloads in data.items():
        for m in (base, new):  # warm-up: caches, lazily built state
            per_obs_us(m, payloads, 1)
        times: dict[str, list[float]] = {"base": [], "new": []}
        for _ in range(rounds):
            times["base"].append(per_obs_us(base, payloads, repeat))
            times["new"].append(per_obs_us(new, payloads, repeat))
        b, w = statistics.median(times["base"]), statistics.median(times["new"])
        figures[f"us_per_obs_{name}_base"] = round(b, 2)
        figures[f"us_per_obs_{name}_new"] = round(w, 2)
        figures[f"ratio_{name}"] = round(w / b, 2)
        print(f"{name:8s} base {b:8.2f} µs/obs   new {w:8.2f} µs/obs   ratio {w / b:5.2f}")
    figures["markers_in_code_base"] = markers(base, data["code"])
    figures["markers_in_code_new"] = markers(new, data["code"])
    figures["corpus_leaks_base"] = sum(s.needle in base.scrub(s.text) for s in SAMPLES)
    figures["corpus_leaks_new"] = sum(s.needle in new.scrub(s.text) for s in SAMPLES)
    figures["corpus_samples"] = len(SAMPLES)
    emit(figures)


if __name__ == "__main__":
    main()
