"""How the MCP server reaches the memory service: REST at AGENTMEMORY_URL, or the bus.

Tools: over REST, upstream's `GET /agentmemory/mcp/tools` and `POST /agentmemory/mcp/call`;
over the bus, the functions' own declarations (`engine.discover`) and a call by id.
Resources and prompts read REST routes (method + path + JSON body); over the bus the route
is resolved through the http triggers stored in KV and its function called directly, as
the http trigger would, minus the HTTP hop.
"""

from __future__ import annotations

import os
import time
from typing import Any, Protocol

import httpx
import msgspec

from engine import TRIGGERS_BUCKET, Client, FunctionError, HttpRequest, TriggerSpec, discover
from engine.protocol import HDR_COERCE
from functions.quarantine.frame import OWNER_ARGUMENTS
from triggers.http.secret import given_secret
from workers.cli.settings import cli_settings
from workers.mcp.catalog import (
    ToolDef,
    error_text,
    result_document,
    text_result,
    tool_defs,
    visible,
)
from workers.mcp.settings import mcp_settings


class GatewayError(Exception):
    """The service refused or could not be reached; `message` is for the model to read."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field

    @property
    def retryable(self) -> bool:
        return self.status in (0, 408, 429) or self.status >= 500


class Gateway(Protocol):
    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
    ) -> Any: ...

    async def tools(self) -> list[dict[str, Any]]:
        """MCP tool descriptors (name, description, inputSchema)."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """An MCP CallToolResult as JSON; a refused call is `isError` with the reason."""
        ...

    async def close(self) -> None: ...


def _error_of(status: int, data: Any) -> GatewayError:
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        return GatewayError(status, str(err.get("message") or err.get("code")), err.get("field"))
    if isinstance(err, str):
        return GatewayError(status, err)
    return GatewayError(status, f"the memory service answered HTTP {status}")


class RestGateway:
    def __init__(self, url: str, secret: str = "", timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Content-Type": "application/json"}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        self._http = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=timeout)

    async def request(
        self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None
    ) -> Any:
        try:
            resp = await self._http.request(
                method,
                path,
                params=query,
                content=msgspec.json.encode(body) if body is not None else None,
            )
        except httpx.HTTPError as exc:
            raise GatewayError(
                0,
                f"agentmemory is not reachable at {self.url} ({type(exc).__name__}); "
                "start it with `agentmemory start`",
            ) from None
        try:
            data = resp.json() if resp.content else None
        except ValueError:
            data = resp.text
        if resp.status_code >= 400:
            if resp.status_code == 401:
                raise GatewayError(
                    401, "unauthorized: set AGENTMEMORY_SECRET to the server's secret"
                )
            raise _error_of(resp.status_code, data)
        return data

    async def tools(self) -> list[dict[str, Any]]:
        doc = await self.request("GET", "/agentmemory/mcp/tools")
        tools = doc.get("tools") if isinstance(doc, dict) else None
        return [t for t in tools or [] if isinstance(t, dict)]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            doc = await self.request(
                "POST", "/agentmemory/mcp/call", {"name": name, "arguments": arguments}
            )
        except GatewayError as err:
            where = f" (field `{err.field}`)" if err.field else ""
            hint = " This may succeed if retried later." if err.retryable else ""
            return text_result(f"{err.message}{where}.{hint}", error=True)
        return doc if isinstance(doc, dict) else text_result(str(doc))

    async def close(self) -> None:
        await self._http.aclose()


class _Reply(msgspec.Struct):
    status: int = 200
    body: Any = None
    content_type: str = "application/json"


class BusGateway:
    """Calls the function an http trigger binds to (method, path), over NATS."""

    def __init__(self, client: Client, timeout: float = 30.0, tools_ttl: float = 5.0) -> None:
        self.client = client
        self.timeout = timeout
        self.tools_ttl = tools_ttl
        self._routes: dict[tuple[str, str], tuple[str, str]] | None = None
        self._tools: tuple[float, list[ToolDef]] | None = None

    async def tool_defs(self) -> list[ToolDef]:
        """The visible tools, from the functions' declarations (cached a few seconds: a
        discovery waits for every worker's answer)."""
        now = time.monotonic()
        if self._tools is None or now - self._tools[0] > self.tools_ttl:
            self._tools = (now, visible(tool_defs(await discover(self.client))))
        return self._tools[1]

    async def tools(self) -> list[dict[str, Any]]:
        return [t.descriptor() for t in await self.tool_defs()]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        found = next((t for t in await self.tool_defs() if t.name == name), None)
        if found is None:
            self._tools = None  # a worker may have started since: look again next time
            return text_result(f"no tool named {name!r}", error=True)
        try:
            # Upstream's clients send numbers and booleans as strings ("3", "true"): the
            # worker decodes a tool's arguments leniently, as it does a query string.
            reply = await self.client.call(
                found.function_id,
                {k: v for k, v in arguments.items() if k not in OWNER_ARGUMENTS},
                timeout=self.timeout,
                headers={HDR_COERCE: "strings"},
            )
        except FunctionError as err:
            return text_result(error_text(err), error=True)
        return result_document(reply, name)

    async def _route(self, method: str, path: str) -> tuple[str, str]:
        if self._routes is None or (method, path) not in self._routes:
            st = await self.client.bucket(TRIGGERS_BUCKET, history=5)
            routes: dict[tuple[str, str], tuple[str, str]] = {}
            for key in await st.keys("http."):
                raw: Any = await st.get(key, dict)
                if raw is None:
                    continue
                spec = msgspec.convert(raw, TriggerSpec)
                cfg = spec.config
                routes[(str(cfg.get("method", "GET")).upper(), str(cfg.get("path")))] = (
                    spec.function_id,
                    str(cfg.get("mode", "http")),
                )
            self._routes = routes
        found = self._routes.get((method, path))
        if found is None:
            raise GatewayError(404, f"the memory service has no route {method} {path} (yet)")
        return found

    async def request(
        self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None
    ) -> Any:
        function_id, mode = await self._route(method.upper(), path)
        raw = msgspec.Raw(msgspec.json.encode(body if body is not None else {}))
        try:
            if mode == "body":
                if query:  # a GET route's request object: strings, coerced by the worker
                    q = msgspec.Raw(msgspec.json.encode({**query, **(body or {})}))
                    return await self.client.call(
                        function_id, q, timeout=self.timeout, headers={HDR_COERCE: "strings"}
                    )
                return await self.client.call(function_id, raw, timeout=self.timeout)
            req = HttpRequest(
                method=method.upper(),
                path=path,
                query=query or {},
                body=raw if body is not None else msgspec.UNSET,
            )
            reply = await self.client.call(function_id, req, response=_Reply, timeout=self.timeout)
        except FunctionError as err:
            raise GatewayError(err.status, err.message, err.field) from None
        data = reply.body
        if reply.status >= 400:
            raise _error_of(reply.status, data)
        return data

    async def close(self) -> None:
        await self.client.nc.close()


async def connect_gateway() -> Gateway:
    """REST when AGENTMEMORY_URL is set (or no local engine runs), else the local bus.

    With no URL and no engine on the instance, the service is started first (detached, as
    `agentmemory start --detach` would), so an agent that launches the MCP server before
    the service never meets "server down"; AGENTMEMORY_MCP_AUTOSTART=false turns it off."""
    url = cli_settings().url
    if not url and mcp_settings().transport != "rest":
        bus = await _local_bus()
        if bus is None and _autostart_enabled() and await _start_service():
            bus = await _local_bus()
        if bus is not None:
            return bus
    return RestGateway(url or _local_url(), _secret())


def _autostart_enabled() -> bool:
    return mcp_settings().autostart


async def _start_service() -> bool:
    """`agentmemory start --detach` on this process's instance; says on stderr what it did."""
    import asyncio
    import logging
    import subprocess
    import sys

    from engine.paths import Instance

    log = logging.getLogger("workers.mcp")
    inst = Instance.resolve()
    cmd = [sys.executable, "-m", "workers.cli", "start", "--detach"]
    log.warning(
        "no agentmemory service runs on instance %d (data dir %s): starting it",
        inst.number,
        inst.data_dir,
    )
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            cmd,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("could not start the service (%s); tools will say so", exc)
        return False
    if done.returncode != 0:
        log.warning("could not start the service: %s", (done.stderr or done.stdout).strip()[-500:])
        return False
    log.warning(
        "started the agentmemory service on instance %d (REST :%d)", inst.number, inst.ports.rest
    )
    return True


async def _local_bus() -> BusGateway | None:
    from engine import connect
    from engine.paths import Instance

    inst = Instance.resolve()
    info = inst.read_pidfile()
    if inst.running_pid() is None or not info or not info.get("nats_url"):
        return None
    creds = str(inst.credentials) if inst.credentials.exists() else None
    try:
        nc = await connect(str(info["nats_url"]), creds, name="mcp", max_reconnect_attempts=3)
    except Exception:
        return None
    return BusGateway(Client(nc))


def _local_url() -> str:
    from engine.paths import Instance

    return f"http://127.0.0.1:{Instance.resolve().ports.rest}"


def _secret() -> str:
    value = given_secret()
    if value:
        return value
    try:
        return open(os.path.join(os.path.expanduser("~"), ".agentmemory", "secret")).read().strip()
    except OSError:
        return ""
