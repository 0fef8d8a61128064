"""Only the owner gets in (workers/viewer/auth.py): without the one-time link's cookie the
viewer's port refuses the export, a forget and the live socket (401), and its page says how
to open it; the URL `agentmemory viewer` prints signs a real Chromium in (HttpOnly,
SameSite=Strict cookie) and the page works as before; a link works once; the REST secret
never reaches the page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.fixtures import ROOT, Stack, needs_chromium
from tests.fixtures import STACK_SECRET as SECRET
from workers.viewer import tokens
from workers.viewer.auth import ViewerAuth
from workers.viewer.settings import ViewerSettings


def test_without_the_link_the_export_a_forget_and_the_page_are_refused(stack: Stack) -> None:
    with stack.rest() as c:
        mem = c.post("/agentmemory/remember", json={"content": "kept " + uuid.uuid4().hex}).json()
    mid = mem["memory"]["id"]
    export = httpx.get(stack.viewer + "/agentmemory/export")
    assert export.status_code == 401 and export.json()["error"]["code"] == "UNAUTHORIZED"
    forget = httpx.post(stack.viewer + "/agentmemory/forget", json={"memoryId": mid})
    assert forget.status_code == 401
    with stack.rest() as c:
        assert c.get(f"/agentmemory/memories/{mid}").status_code == 200  # nothing forgotten
    page = httpx.get(stack.viewer + "/")
    assert page.status_code == 401 and "agentmemory viewer" in page.text
    assert "<script" not in page.text and SECRET not in page.text
    # A cookie that is not the viewer's, or one signed with another secret, is no better.
    forged = {"cookie": f"{stack.cookie_name}={tokens.session_cookie('another secret')}"}
    assert httpx.get(stack.viewer + "/agentmemory/export", headers=forged).status_code == 401


async def test_the_live_socket_answers_401_without_the_cookie(stack: Stack) -> None:
    ws = stack.viewer.replace("http", "ws") + "/live"
    with pytest.raises(InvalidStatus) as err:
        async with connect(ws, origin=stack.viewer) as conn:  # type: ignore[arg-type]
            await conn.recv()
    assert err.value.response.status_code == 401


def test_a_link_signs_in_once_and_an_expired_one_not_at_all(stack: Stack) -> None:
    url = stack.login_url()
    first = httpx.get(url, follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(stack.cookie_name + "=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    again = httpx.get(url, follow_redirects=False)
    assert again.status_code == 401 and "used already" in again.text
    made_11_s_ago = tokens.login_token(SECRET, 10, now=time.time() - 11)  # a 10 s life
    late = httpx.get(f"{stack.viewer}/?token={made_11_s_ago}", follow_redirects=False)
    assert late.status_code == 401 and "expired" in late.text
    other = tokens.login_url(stack.engine.ports["viewer"], "not the secret")
    assert httpx.get(other, follow_redirects=False).status_code == 401


def _cli_url(stack: Stack) -> str:
    """The link `agentmemory viewer --no-open` prints for this stack."""
    env = dict(os.environ, AGENTMEMORY_SECRET=SECRET, HOME=str(stack.home), PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-m", "workers.cli", "viewer", "--no-open", "--port",
         str(stack.engine.anchor)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    m = re.search(r"viewer: (http://127\.0\.0\.1:\d+/\?token=\S+)", out.stdout)
    assert m, out.stdout
    return m.group(1)


@needs_chromium
def test_the_url_agentmemory_viewer_prints_opens_a_working_page(browser: Any, stack: Stack) -> None:
    url = _cli_url(stack)
    assert url.startswith(stack.viewer + "/?token=")
    with stack.rest() as c:
        mem = c.post("/agentmemory/remember", json={"content": "seen by its owner " + uuid.uuid4().hex,
                                                    "project": "viewer-demo"}).json()["memory"]  # fmt: skip
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    bodies: list[str] = []

    def keep(resp: Any) -> None:
        try:
            bodies.append(resp.url + "\n" + resp.text())
        except Exception:  # a redirect or a socket upgrade has no body
            bodies.append(resp.url)

    pg = ctx.new_page()
    pg.on("response", keep)
    pg.goto(url)
    assert pg.url == stack.viewer + "/"  # the token is gone from the address bar
    pg.locator('#live-status[data-state="live"]').wait_for(timeout=15000)
    assert pg.evaluate("() => document.cookie") == ""  # HttpOnly: no script can read it
    pg.goto(f"{stack.viewer}/#memories/{mem['id']}")
    pg.locator("#memory-forget").click()
    pg.locator("#confirm-reason").fill("checked")
    pg.locator("#confirm-ok").click()
    pg.wait_for_url("**/#memories")
    with stack.rest() as c:
        assert c.get(f"/agentmemory/memories/{mem['id']}").status_code == 404
    cookies = ctx.cookies()
    ctx.close()
    assert [c["name"] for c in cookies] == [stack.cookie_name]
    assert cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
    assert all(SECRET not in b for b in bodies)  # the secret never reached the page
    assert len(bodies) > 5


@pytest.mark.unit
def test_the_login_can_be_turned_off_for_a_trusted_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    async def export(request: Any) -> PlainTextResponse:
        return PlainTextResponse("everything")

    app = Starlette(routes=[Route("/agentmemory/export", export)])
    open_app = TestClient(ViewerAuth(app, SECRET, 3113, 0, spent=None))
    assert open_app.get("/agentmemory/export").text == "everything"
    monkeypatch.setenv("VIEWER_AUTH", "none")
    assert ViewerSettings.from_env().auth == "none"
    monkeypatch.setenv("VIEWER_AUTH", "nobody")
    with pytest.raises(ValueError, match="VIEWER_AUTH"):
        ViewerSettings.from_env()
