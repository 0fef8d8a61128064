"""engine/_heap.py: a worker process gives the memory it freed back to the system, when it
has been busy, and leaves an idle process alone."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine._heap import ENV_TRIM_SECONDS, malloc_trim, trim_seconds
from engine.server import NatsServer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")

FRAGMENT = """
def fragment():
    # 200 MB in 64 KB blocks (below malloc's mmap threshold: they live in the heap), each
    # followed by a small block that stays: freeing the large ones leaves holes that the
    # heap cannot give back from its top
    big, kept = [], []
    for _ in range(3000):
        big.append(bytearray(64 * 1024))
        kept.append(bytearray(512))
    del big
    return kept

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
"""


def _run(script: str, **env: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FRAGMENT) + textwrap.dedent(script)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return out.stdout.split()


@pytest.mark.unit
def test_malloc_trim_gives_a_fragmented_heap_back() -> None:
    assert malloc_trim() is not None
    before, after = map(float, _run("""
        from engine._heap import malloc_trim
        kept = fragment()
        before = rss_mb()
        malloc_trim()()
        print(before, rss_mb())
    """))  # fmt: skip
    assert before > 150, before  # the holes are resident...
    assert after < before - 120, (before, after)  # ...until trimmed


@pytest.mark.unit
@pytest.mark.parametrize("busy, trimmed", [(0.0, True), (1000.0, False)])
def test_the_trimmer_runs_when_the_process_was_busy_only(busy: float, trimmed: bool) -> None:
    before, after = map(float, _run(f"""
        import asyncio
        from engine._heap import keep_trimmed
        async def main():
            kept = fragment()
            before = rss_mb()
            task = asyncio.ensure_future(keep_trimmed(0.1, busy={busy}))
            await asyncio.sleep(0.6)
            task.cancel()
            print(before, rss_mb())
        asyncio.run(main())
    """))  # fmt: skip
    assert before > 150, before
    if trimmed:
        assert after < before - 120, (before, after)
    else:  # under the CPU it asks for since the last trim: left alone
        assert after > before - 20, (before, after)


def test_a_worker_process_trims_its_heap_after_busy_calls(nats_server: NatsServer) -> None:
    """The runtime every worker process runs under (engine/_runtime.py) keeps the trimmer:
    after a call that fragments the heap, the process's resident set falls without anything
    else happening; with the setting at 0 it stays."""
    script = """
        import asyncio, sys
        from engine import Context, Worker
        from engine._runtime import serve
        worker = Worker("heap-test-" + sys.argv[1])
        held = []

        @worker.function("heap_test_" + sys.argv[1] + "::fragment")
        async def frag(req: None, ctx: Context) -> float:
            held.append(fragment())
            end = __import__("time").process_time() + 0.6  # busy, as a worker under load
            while __import__("time").process_time() < end:
                pass
            return rss_mb()

        asyncio.run(serve(worker))
    """
    results = {}
    for setting in ("0.2", "0"):
        tag = "on" if setting != "0" else "off"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "ENGINE_NATS_URL": nats_server.url,
               ENV_TRIM_SECONDS: setting}  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(FRAGMENT) + textwrap.dedent(script), tag],
            cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if line.startswith("ENGINE_WORKER_READY"):
                    break
            else:
                pytest.fail("worker did not start")
            answered = float(_call(nats_server.url, f"heap_test_{tag}::fragment"))
            time.sleep(1.5)
            now = _rss_of(proc.pid)
            results[tag] = (answered, now)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    on_answered, on_now = results["on"]
    off_answered, off_now = results["off"]
    assert on_answered > 150 and off_answered > 150, results
    assert on_now < on_answered - 120, results
    assert off_now > off_answered - 20, results


def _call(url: str, function_id: str) -> str:
    import asyncio

    from engine import connect

    async def go() -> str:
        from engine import Client

        nc = await connect(url)
        try:
            return str(await Client(nc).call(function_id, None, response=float, timeout=30))
        finally:
            await nc.close()

    return asyncio.run(go())


def _rss_of(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.unit
@pytest.mark.parametrize("raw", ["soon", "-1"])
def test_a_bad_setting_is_named(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_TRIM_SECONDS, raw)
    with pytest.raises(ValueError, match=ENV_TRIM_SECONDS):
        trim_seconds()


@pytest.mark.unit
def test_the_default_and_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_TRIM_SECONDS, raising=False)
    assert trim_seconds() == 30.0
    monkeypatch.setenv(ENV_TRIM_SECONDS, "0")
    assert trim_seconds() == 0.0


MAPPED = """
import ctypes, sys
def in_heap(buf):
    at = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= at < hi:
                return True
    return False
if sys.argv[-1] == "fixed":
    from engine._heap import map_large_allocations
    assert map_large_allocations()
big = bytearray(16 << 20)  # mapped, then freed: glibc raises its threshold to 16 MB
del big
blocks = [bytearray(1 << 20) for _ in range(4)]
print(sum(in_heap(b) for b in blocks))
"""


@pytest.mark.unit
@pytest.mark.parametrize("mode", ["fixed", "default"])
def test_large_allocations_keep_their_own_mapping_once_fixed(mode: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", MAPPED, mode], cwd=ROOT, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    in_heap = int(out.stdout.strip())
    if mode == "fixed":
        assert in_heap == 0  # each 1 MB block mapped on its own, given back whole on free
    else:
        assert in_heap == 4  # glibc's raised threshold put them in the heap


@pytest.mark.unit
def test_the_search_worker_fixes_the_threshold() -> None:
    setup = "import workers.search\nworkers.search.build()\n"
    out = subprocess.run(
        [sys.executable, "-c", setup + MAPPED, "as built"], cwd=ROOT, capture_output=True,
        text=True, timeout=120, check=True,
    )  # fmt: skip
    assert int(out.stdout.strip().splitlines()[-1]) == 0
