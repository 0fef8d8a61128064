"""The http trigger through real processes: nats-server, the trigger worker, a function worker."""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from engine import Client
from tests.fixtures import eventually, free_port
from triggers.http.secret import bearer_matches, load_secret

SECRET = "s3cret-token"
AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


@pytest.fixture
async def http(spawn) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    port = free_port()
    spawn("tests.triggers.fixture_worker", "http")
    spawn(
        "workers.trigger_plugins",
        "http",
        env={
            "AGENTMEMORY_REST_PORT": str(port),
            "AGENTMEMORY_SECRET": SECRET,
            "VIEWER_ALLOWED_ORIGINS": "https://app.example",
        },
    )
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as c:
        yield c


async def test_route_hands_the_function_method_path_params_query_headers_and_body(http) -> None:
    r = await http.post("/t/echo/bob?x=1&y=two", json={"a": [1, 2]}, headers=AUTH)
    assert r.status_code == 201
    assert r.headers["x-fn"] == "echo"
    got = r.json()
    assert (got["method"], got["path"]) == ("POST", "/t/echo/bob")
    assert got["params"] == {"name": "bob"}
    assert got["query"] == {"x": "1", "y": "two"}
    assert got["body"] == {"a": [1, 2]}
    assert got["headers"]["content-type"] == "application/json"
    assert "authorization" not in got["headers"]  # the secret never reaches the function


async def test_missing_or_wrong_bearer_is_401_in_the_one_error_shape(http) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {SECRET}"}):
        r = await http.get("/t/echo/x", headers=headers)
        assert r.status_code == 401
        err = r.json()["error"]
        assert (err["code"], err["field"]) == ("UNAUTHORIZED", "authorization")
        assert "Authorization: Bearer" in err["message"]


async def test_route_with_auth_none_needs_no_bearer(http) -> None:
    r = await http.get("/t/open")
    assert r.status_code == 200
    assert r.json()["path"] == "/t/open"


async def test_oversized_body_is_413_whether_declared_or_chunked(http) -> None:
    big = b'{"pad": "' + b"x" * 100 + b'"}'
    r = await http.post("/t/small", content=big, headers=AUTH)
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "TOO_LARGE"

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"x" * 20

    r = await http.post("/t/small", content=chunks(), headers=AUTH)
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "TOO_LARGE"


async def test_malformed_json_is_400_naming_the_problem(http) -> None:
    r = await http.post("/t/echo/x", content=b'{"a": 1,,}', headers=AUTH)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "BAD_REQUEST"
    assert "malformed JSON" in err["message"] and "byte" in err["message"]
    assert err["field"] == "body"


async def test_write_with_wrong_content_type_is_415(http) -> None:
    headers = {"Authorization": f"Bearer {SECRET}", "Content-Type": "text/plain"}
    r = await http.post("/t/echo/x", content=b"hello", headers=headers)
    assert r.status_code == 415
    assert r.json()["error"]["field"] == "content-type"


async def test_unknown_route_is_404_and_wrong_method_is_405_with_json_errors(http) -> None:
    r = await http.get("/nowhere", headers=AUTH)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "NOT_FOUND"
    r = await http.delete("/t/open", headers=AUTH)
    assert r.status_code == 405
    assert r.headers["allow"] == "GET"
    assert r.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


async def test_handler_past_its_deadline_is_504(http) -> None:
    r = await http.get("/t/slow?s=3", headers=AUTH)
    assert r.status_code == 504
    assert r.json()["error"]["code"] == "DEADLINE_EXCEEDED"


async def test_function_error_maps_to_its_status_and_field(http) -> None:
    r = await http.get("/t/fail?code=CONFLICT&field=key", headers=AUTH)
    assert r.status_code == 409
    assert r.json()["error"] | {} == {
        "code": "CONFLICT",
        "message": "failed with CONFLICT",
        "field": "key",
        "retryable": True,
    }
    r = await http.get("/t/fail?code=UNAUTHORIZED", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (401, "UNAUTHORIZED")


async def test_crashing_handler_is_500_without_internals(http) -> None:
    r = await http.get("/t/crash", headers=AUTH)
    assert r.status_code == 500
    assert r.json()["error"]["code"] == "INTERNAL"
    assert "file.py" not in r.text and "Traceback" not in r.text


async def test_unserved_function_is_503(http, client: Client) -> None:
    store = await client.bucket("engine_triggers", history=5)
    from engine import TriggerSpec

    spec = TriggerSpec(kind="http", function_id="t::ghost", config={"path": "/t/ghost"})
    await store.put(spec.key, spec)

    async def served() -> bool:
        return (await http.get("/t/ghost", headers=AUTH)).status_code == 503

    await eventually(served, what="503 for a route whose function has no worker")


async def test_origins_outside_the_allowlist_are_403_and_allowed_ones_get_cors(http) -> None:
    r = await http.get("/t/open", headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    for origin in ("http://localhost:3113", "https://app.example"):
        r = await http.get("/t/open", headers={"Origin": origin})
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == origin
    r = await http.options(
        "/t/echo/x",
        headers={"Origin": "http://127.0.0.1:3113", "Access-Control-Request-Method": "POST"},
    )
    assert r.status_code == 204
    assert "POST" in r.headers["access-control-allow-methods"]


async def test_call_completes_after_the_client_hangs_up(http, client: Client) -> None:
    with pytest.raises(httpx.TimeoutException):
        await http.post("/t/slow-ok?s=1&tag=done", json={}, headers=AUTH, timeout=0.2)
    st = await client.bucket("fixtures")

    async def finished() -> bool:
        return await st.get("slow-finished") == "done"

    await eventually(finished, what="the slow call to finish after the disconnect")


async def test_body_mode_passes_the_json_body_and_returns_the_reply(http) -> None:
    r = await http.post("/t/note", json={"text": "hi", "n": 1}, headers=AUTH)
    assert (r.status_code, r.json()) == (201, {"text": "HI", "n": 2})
    r = await http.post("/t/note", json={"n": 1}, headers=AUTH)
    assert r.status_code == 400
    assert r.json()["error"]["field"] == "text"


async def test_non_json_reply_keeps_its_content_type(http) -> None:
    r = await http.get("/t/html")
    assert r.headers["content-type"].startswith("text/html")
    assert r.text == "<h1>hi</h1>"


async def test_openapi_document_lists_routes_and_their_schemas(http) -> None:
    doc = (await http.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.")
    op = doc["paths"]["/t/note"]["post"]
    assert op["operationId"] == "t::note"
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    assert schema["$ref"] == "#/components/schemas/Note"
    assert "text" in doc["components"]["schemas"]["Note"]["properties"]
    assert doc["paths"]["/t/echo/{name}"]["get"]["parameters"][0]["name"] == "name"
    assert "security" not in doc["paths"]["/t/open"]["get"]
    put = doc["paths"]["/t/note"]["put"]  # declared without schemas: read from $SRV.INFO
    assert put["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/Note")
    assert "content" in put["responses"]["200"]


async def test_routes_appear_live_when_a_worker_registers_later(spawn, client: Client) -> None:
    port = free_port()
    spawn(
        "workers.trigger_plugins",
        "http",
        env={"AGENTMEMORY_REST_PORT": str(port), "AGENTMEMORY_SECRET": SECRET},
    )
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as c:
        assert (await c.get("/t/open")).status_code == 404
        spawn("tests.triggers.fixture_worker", "http")

        async def routed() -> bool:
            return (await c.get("/t/open")).status_code == 200

        await eventually(routed, what="the new route to be served")


@pytest.mark.unit
def test_secret_is_generated_once_with_mode_0600(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("AGENTMEMORY_SECRET", raising=False)
    path = tmp_path / "home" / ".agentmemory" / "secret"
    first = load_secret(path)
    assert len(first) >= 32
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_secret(path) == first
    monkeypatch.setenv("AGENTMEMORY_SECRET", "from-env")
    assert load_secret(path) == "from-env"
    assert bearer_matches("Bearer from-env", "from-env")
    assert not bearer_matches("Bearer from-en", "from-env")


async def test_route_deleted_from_the_trigger_bucket_stops_being_served(http, client) -> None:
    store = await client.bucket("engine_triggers", history=5)
    keys = []
    for k in await store.keys("http."):
        if (await store.get(k))["config"].get("path") == "/t/open":
            keys.append(k)
    assert (await http.get("/t/open")).status_code == 200
    for k in keys:
        await store.delete(k)

    async def gone() -> bool:
        return (await http.get("/t/open")).status_code == 404

    await eventually(gone, what="the deleted route to disappear")


async def test_two_http_workers_share_the_port_and_one_survives_the_other(spawn) -> None:
    port = free_port()
    env = {"AGENTMEMORY_REST_PORT": str(port), "AGENTMEMORY_SECRET": SECRET}
    spawn("tests.triggers.fixture_worker", "http")
    first = spawn("workers.trigger_plugins", "http", env=env)
    spawn("workers.trigger_plugins", "http", env=env)
    first.kill()
    first.wait()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as c:
        for _ in range(5):  # fresh connections: each may land on either listener
            r = await c.get("/t/open", headers={"Connection": "close"})
            assert r.status_code == 200


# ---- routes from a function's own declaration (http=Http(...)) ---------------------------
async def test_a_query_route_decodes_strings_into_the_request_type(http) -> None:
    r = await http.get("/t/page/bob?limit=5&flag=true", headers=AUTH)
    assert r.status_code == 200
    assert r.json() == {"limit": 5, "flag": True, "name": "bob", "agentId": ""}
    agent = await http.get("/t/page/bob", headers={**AUTH, "X-Agent-Id": "codex"})
    assert agent.json()["agentId"] == "codex"  # the header fills the empty field
    named = await http.get("/t/page/bob?agentId=claude", headers={**AUTH, "X-Agent-Id": "codex"})
    assert named.json()["agentId"] == "claude"  # the request's own value wins
    bad = await http.get("/t/page/bob?limit=lots", headers=AUTH)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "limit"


async def test_a_merge_route_takes_query_body_and_path_with_the_path_winning(http) -> None:
    r = await http.patch(
        "/t/merge/bob?limit=3", json={"flag": True, "name": "not-bob"}, headers=AUTH
    )
    assert r.status_code == 200
    assert r.json() == {"limit": 3, "flag": True, "name": "bob", "agentId": ""}
    bad = await http.patch("/t/merge/bob", json=[1, 2], headers=AUTH)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "body"


async def test_the_status_follows_a_field_of_the_reply(http) -> None:
    new = await http.post("/t/outcome", json={"status": "new"}, headers=AUTH)
    dup = await http.post("/t/outcome", json={"status": "dup"}, headers=AUTH)
    assert (new.status_code, dup.status_code) == (201, 200)
    assert dup.json() == {"status": "dup"}


async def test_a_page_answers_at_the_path_of_a_json_route_when_html_is_accepted(http) -> None:
    page = await http.get("/t/page/ann", headers={**AUTH, "Accept": "text/html,*/*"})
    assert page.headers["content-type"].startswith("text/html") and page.text == "<p>ann</p>"
    data = await http.get("/t/page/ann", headers={**AUTH, "Accept": "application/json"})
    assert data.json()["name"] == "ann"


async def test_openapi_documents_declared_routes_where_their_requests_come_from(http) -> None:
    doc = (await http.get("/openapi.json")).json()
    get = doc["paths"]["/t/page/{name}"]["get"]
    params = {(p["in"], p["name"]): p for p in get["parameters"]}
    assert ("path", "name") in params and ("query", "name") not in params
    assert params[("query", "limit")]["schema"]["type"] == "integer"
    assert "requestBody" not in get
    assert "text/html" in get["responses"]["200"]["content"]  # the page, as another content
    merge = doc["paths"]["/t/merge/{name}"]["patch"]
    assert "requestBody" in merge and ("query", "limit") in {
        (p["in"], p["name"]) for p in merge["parameters"]
    }
    outcome = doc["paths"]["/t/outcome"]["post"]["responses"]
    assert {"200", "201", "401"} <= set(outcome)
    unauthorized = outcome["401"]["content"]["application/json"]["schema"]
    assert unauthorized["properties"]["error"]["required"] == ["code", "message"]


async def test_a_route_a_worker_no_longer_declares_is_removed_when_it_starts(
    spawn, client: Client, http
) -> None:
    assert (await http.get("/t/page/x", headers=AUTH)).status_code == 200
    # The same worker, started again declaring only its queue group: its routes are gone.
    spawn("tests.triggers.fixture_worker", "queue")

    async def gone() -> bool:
        return (await http.get("/t/page/x", headers=AUTH)).status_code == 404

    await eventually(gone, what="the undeclared route to be removed")


@pytest.mark.unit
def test_processes_generating_the_secret_together_agree_on_one(tmp_path: Path) -> None:
    """The two memory replicas start at once with no secret yet: both must end up with the
    same non-empty secret (one of them read an empty, half-made file before)."""
    import subprocess
    import sys

    path = tmp_path / "home" / ".agentmemory" / "secret"
    code = (
        "import sys; from pathlib import Path; from triggers.http.secret import load_secret; "
        "print(load_secret(Path(sys.argv[1])))"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTMEMORY_SECRET"}
    path.parent.mkdir(parents=True)
    for n in range(6):
        if path.exists():
            path.unlink()
        if n % 2:  # what a writer killed half-way (or an older version mid-write) leaves
            path.write_text("")
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(path)], env=env, stdout=subprocess.PIPE, text=True
            )
            for _ in range(8)
        ]
        got = {p.communicate(timeout=30)[0].strip() for p in procs}
        assert len(got) == 1 and "" not in got, got
        assert path.read_text().strip() in got
