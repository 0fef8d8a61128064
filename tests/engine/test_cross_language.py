"""Callers that know only docs/PROTOCOL.md: Node.js (npm `nats`) and raw nats-py."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from pathlib import Path

import nats
import pytest

XLANG = Path(__file__).resolve().parent.parent / "xlang"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
async def test_node_client_calls_functions_by_the_protocol_only(engine_factory) -> None:
    if not (XLANG / "node_modules" / "nats").exists():
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent"],
            cwd=XLANG,
            check=True,
            timeout=300,
        )
    eng = engine_factory().start()
    out = await asyncio.to_thread(
        subprocess.run,
        ["node", "call.js", eng.nats_url, eng.credentials],
        cwd=XLANG,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode()
    res = json.loads(out.stdout)
    assert res["echo"] == {"ok": {"text": "from node"}}
    assert res["bad"]["status"] == 400
    assert res["bad"]["error"]["code"] == "BAD_REQUEST" and res["bad"]["error"]["field"] == "text"
    assert res["fail"] == {
        "status": 404,
        "error": {"code": "NOT_FOUND", "message": "nothing here", "retryable": False},
    }
    late = res["late"]
    assert late.get("status") == 504 or "timeout" in late, late


async def test_raw_nats_py_client_calls_functions_by_the_protocol_only(engine_factory) -> None:
    eng = engine_factory().start()
    creds = json.loads(Path(eng.credentials).read_text())
    nc = await nats.connect(eng.nats_url, user=creds["user"], password=creds["password"])
    try:
        hdr = {"Engine-Deadline": str(int((time.time() + 5) * 1000))}
        msg = await nc.request("fn.example.echo", b'{"text": "raw"}', timeout=5, headers=hdr)
        assert not (msg.headers or {}).get("Nats-Service-Error-Code")
        assert json.loads(msg.data) == {"text": "raw"}

        msg = await nc.request(
            "fn.example.fail",
            b'{"code": "CONFLICT", "message": "try later"}',
            timeout=5,
            headers=hdr,
        )
        assert msg.headers["Nats-Service-Error-Code"] == "409"
        assert json.loads(msg.data)["error"] == {
            "code": "CONFLICT",
            "message": "try later",
            "retryable": True,
        }
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request("fn.nobody.home", b"{}", timeout=5)
        # Discovery: the example worker lists its functions with their subjects.
        info = json.loads((await nc.request("$SRV.INFO.example", b"", timeout=5)).data)
        subjects = {e["metadata"]["function_id"]: e["subject"] for e in info["endpoints"]}
        assert subjects["example::echo"] == "fn.example.echo"
    finally:
        await nc.close()
