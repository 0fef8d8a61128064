"""The route table: http trigger declarations turned into method + path matchers.

Config keys of an `http` trigger (all but `path` optional):

- `method`: HTTP method, default "GET".
- `path`: starlette-style path, `{param}` (or `{param:path}`, `{n:int}`) segments.
- `auth`: "bearer" (default; `Authorization: Bearer <secret>` required) or "none".
- `max_body`: largest request body in bytes, default 1 MiB; larger gets 413.
- `timeout`: seconds the function may take, default 30; past it the client gets 504.
- `content_types`: media types accepted for a body, default ["application/json"]; others
  get 415. A JSON body is checked before the call (400 naming the problem); a non-JSON body
  reaches the function as a JSON string.
- `mode`: "http" (default) — the function gets `engine.HttpRequest` and returns
  `engine.HttpResponse`; "body" — the function gets a request object (see `source`),
  decoded on the worker into its own request type, and its reply is sent as the JSON body
  with status `status` (default 200). A function declared with `http=engine.Http(...)`
  gets a "body" route from that declaration.
- `source` ("body" mode): where the request object comes from — `body` (default), `query`
  (the query string, values as strings the worker coerces), `path`, `merge` (query, body,
  path parameters; later wins) or `none`. Path parameters are always merged in.
- `headers` ("body" mode): request header -> request field, filled when absent or empty.
- `status`: success status in "body" mode; `status_field` + `status_by`: a reply field
  whose value picks the status (observe: accepted 201, duplicate 200, retrying 202).
- `accept`: a media type; the route answers requests whose Accept header names it, the
  route of the same method and path without `accept` the others.
- `summary`, `description`, `tags`, `body_schema`, `response_schema`: OpenAPI document
  entries; schemas are JSON Schema dicts, e.g. `msgspec.json.schema(MyStruct)`. "body"
  routes take their schemas from the function's own types when these are not given.
- `responses`: the operation's OpenAPI responses by status, where its replies are not the
  usual success and error shapes (a protocol served on one path, such as MCP's JSON-RPC);
  the 401 of the bearer check is added to them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from starlette.routing import compile_path

from engine import TriggerSpec

MiB = 1024 * 1024


class RouteConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    path: str
    method: str = "GET"
    auth: Literal["bearer", "none"] = "bearer"
    max_body: int = MiB
    timeout: float = 30.0
    content_types: list[str] = msgspec.field(default_factory=lambda: ["application/json"])
    mode: Literal["http", "body"] = "http"
    source: Literal["body", "query", "path", "merge", "none"] = "body"
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    status: int = 200
    status_field: str = ""
    status_by: dict[str, int] = msgspec.field(default_factory=dict)
    accept: str = ""
    summary: str = ""
    description: str = ""
    tags: list[str] = msgspec.field(default_factory=list)
    body_schema: dict[str, Any] | None = None
    response_schema: dict[str, Any] | None = None
    responses: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.method = self.method.upper()
        if not self.path.startswith("/"):
            raise ValueError(f"http trigger path {self.path!r} must start with '/'")
        if self.max_body < 0 or self.timeout <= 0:
            raise ValueError("http trigger max_body must be >= 0 and timeout > 0")
        self.content_types = [c.lower() for c in self.content_types]
        self.headers = {k.lower(): v for k, v in self.headers.items()}
        self.accept = self.accept.lower()


@dataclass
class Route:
    key: str
    function_id: str
    config: RouteConfig
    regex: re.Pattern[str]
    convertors: dict[str, Any]
    params: list[str] = field(default_factory=list)

    @property
    def requires_bearer(self) -> bool:
        return self.config.auth == "bearer"


def route_from_spec(spec: TriggerSpec) -> Route:
    cfg = msgspec.convert(spec.config, RouteConfig)
    regex, _fmt, convertors = compile_path(cfg.path)
    return Route(spec.key, spec.function_id, cfg, regex, convertors, list(convertors))


def _pick(routes: list[Route], accept: str) -> Route:
    """The route for a request's Accept header among routes of one method and path."""
    if len(routes) == 1:
        return routes[0]
    default = routes[0]
    for r in routes:
        if not r.config.accept:
            default = r
        elif r.config.accept in accept:
            return r
    return default


class RouteTable:
    """Exact paths in a dict (the common case, one lookup); templated paths by regex."""

    def __init__(self) -> None:
        self._by_key: dict[str, Route] = {}
        self._static: dict[tuple[str, str], list[Route]] = {}
        self._templated: list[Route] = []
        self.version = 0

    def put(self, route: Route) -> None:
        self._by_key[route.key] = route
        self._rebuild()

    def remove(self, key: str) -> None:
        if self._by_key.pop(key, None) is not None:
            self._rebuild()

    def routes(self) -> list[Route]:
        return sorted(self._by_key.values(), key=lambda r: (r.config.path, r.config.method))

    def _rebuild(self) -> None:
        by_target: dict[tuple[str, str, str], Route] = {}
        # Oldest first so a later declaration of the same method + path (+ accept) wins.
        for r in self._by_key.values():
            by_target[(r.config.method, r.config.path, r.config.accept)] = r
        static: dict[tuple[str, str], list[Route]] = {}
        templated: list[Route] = []
        for r in by_target.values():
            if r.params:
                templated.append(r)
            else:
                static.setdefault((r.config.method, r.config.path), []).append(r)
        # Longer templates first: `/a/{x}/b` before `/a/{x:path}`.
        templated.sort(key=lambda r: len(r.config.path), reverse=True)
        self._static, self._templated = static, templated
        self.version += 1

    def match(
        self, method: str, path: str, accept: str = ""
    ) -> tuple[Route | None, dict[str, str], bool]:
        """(route, path params, path_exists) — path_exists tells 405 from 404."""
        found = self._static.get((method, path))
        if found is not None:
            return _pick(found, accept), {}, True
        exists = False
        hits: list[Route] = []
        params: dict[str, str] = {}
        for r in self._templated:
            m = r.regex.match(path)
            if m is None:
                continue
            if r.config.method == method:
                if not hits:
                    params = m.groupdict()
                if not hits or r.config.path == hits[0].config.path:
                    hits.append(r)
                continue
            exists = True
        if hits:
            return _pick(hits, accept), params, True
        if not exists:
            exists = any(p == path for (_m, p) in self._static)
        return None, {}, exists

    def methods_for(self, path: str) -> list[str]:
        out = {m for (m, p) in self._static if p == path}
        out.update(r.config.method for r in self._templated if r.regex.match(path))
        return sorted(out)
