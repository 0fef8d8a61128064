"""MCP over Streamable HTTP (`POST /agentmemory/mcp`) against its peers on the same stack.

The default stack (config/engine.yaml, `agentmemory start --detach` in a throwaway HOME,
data dir and port block) answers one small tool call, `memory_sessions {limit: 1}`, three
ways in alternating rounds, so machine noise hits all alike:
  - mcp: a JSON-RPC `tools/call` in an MCP session (the SDK's transport in the function),
  - shim: upstream's `POST /agentmemory/mcp/call` (the same tool, no MCP framing),
  - rest: `GET /agentmemory/sessions?limit=1` (the route itself).
Each over one keep-alive connection. The ratio mcp_p50 / shim_p50 is what the MCP transport
costs a call; `--quick` for a short run.

    python ops/bench/mcp_http.py [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.settings import environ
from ops.bench.harness import ROOT, emit, free_block, machine, median, pct

_CLI = Path(sys.executable).parent / "agentmemory"
CLI = [str(_CLI)] if _CLI.exists() else [sys.executable, "-m", "workers.cli"]
PATH = "/agentmemory/mcp"
CALL = {"name": "memory_sessions", "arguments": {"limit": 1}}


def _ms(
    c: httpx.Client,
    method: str,
    path: str,
    body: object = None,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> float:
    t0 = time.perf_counter()
    r = c.request(method, path, json=body, headers=headers, params=params)
    elapsed = (time.perf_counter() - t0) * 1000
    if r.status_code != 200 or (path == PATH and "error" in r.json()):
        raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:300]}")
    return elapsed


def _session(c: httpx.Client) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    r = c.post(PATH, json=init)
    r.raise_for_status()
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    c.post(PATH, json=note, headers=headers).raise_for_status()
    return headers


def _serving(c: httpx.Client) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if c.post("/agentmemory/mcp/call", json=CALL).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the MCP routes did not come up")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    rounds = 60 if ap.parse_args().quick else 400
    with tempfile.TemporaryDirectory(prefix="mcpbench-") as tmp:
        root = Path(tmp)
        home, data = root / "home", root / "data"
        home.mkdir()
        anchor = free_block(6)
        base = {k: v for k, v in environ().items() if not k.startswith(("AGENTMEMORY_", "ENGINE_"))}
        env = {**base, "HOME": str(home), "PYTHONPATH": str(ROOT)}
        target = ["--data-dir", str(data), "--port", str(anchor)]
        config = ["--config", str(ROOT / "config" / "engine.yaml")]
        subprocess.run(
            [*CLI, "start", "--detach", *target, *config], env=env, check=True, capture_output=True
        )
        try:
            secret = (home / ".agentmemory" / "secret").read_text().strip()
            headers = {
                "Authorization": f"Bearer {secret}",
                "Accept": "application/json, text/event-stream",
            }
            with httpx.Client(
                base_url=f"http://127.0.0.1:{anchor}", headers=headers, timeout=30
            ) as c:
                _serving(c)
                session = _session(c)
                rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": CALL}
                for _ in range(10):  # warm: discovery cached, connections made
                    _ms(c, "POST", PATH, rpc, session)
                    _ms(c, "POST", "/agentmemory/mcp/call", CALL)
                mcp, shim, rest = [], [], []
                for i in range(rounds):
                    rpc["id"] = i + 2
                    mcp.append(_ms(c, "POST", PATH, rpc, session))
                    shim.append(_ms(c, "POST", "/agentmemory/mcp/call", CALL))
                    rest.append(_ms(c, "GET", "/agentmemory/sessions", params={"limit": "1"}))
        finally:
            subprocess.run([*CLI, "stop", *target], env=env, capture_output=True)
    figures = {
        "bench": "mcp_http",
        "rounds": rounds,
        **machine(),
        "mcp_p50_ms": round(median(mcp), 2),
        "mcp_p99_ms": round(pct(mcp, 99), 2),
        "shim_p50_ms": round(median(shim), 2),
        "shim_p99_ms": round(pct(shim, 99), 2),
        "rest_p50_ms": round(median(rest), 2),
    }
    figures["ratio_mcp_shim_p50"] = round(figures["mcp_p50_ms"] / figures["shim_p50_ms"], 2)
    print(
        f"memory_sessions: MCP over HTTP p50 {figures['mcp_p50_ms']} ms (p99 "
        f"{figures['mcp_p99_ms']}), shim p50 {figures['shim_p50_ms']} ms, REST route p50 "
        f"{figures['rest_p50_ms']} ms; ratio mcp/shim = {figures['ratio_mcp_shim_p50']}"
    )
    emit(figures)


if __name__ == "__main__":
    main()
