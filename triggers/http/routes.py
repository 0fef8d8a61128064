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
  `engine.HttpResponse`; "body" — the function gets the JSON body itself (`{}` when empty)
  and its reply is sent as the JSON body with status `status` (default 200).
- `status`: success status in "body" mode.
- `summary`, `description`, `tags`, `body_schema`, `response_schema`: OpenAPI document
  entries; schemas are JSON Schema dicts, e.g. `msgspec.json.schema(MyStruct)`.
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
    status: int = 200
    summary: str = ""
    description: str = ""
    tags: list[str] = msgspec.field(default_factory=list)
    body_schema: dict[str, Any] | None = None
    response_schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.method = self.method.upper()
        if not self.path.startswith("/"):
            raise ValueError(f"http trigger path {self.path!r} must start with '/'")
        if self.max_body < 0 or self.timeout <= 0:
            raise ValueError("http trigger max_body must be >= 0 and timeout > 0")
        self.content_types = [c.lower() for c in self.content_types]


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


class RouteTable:
    """Exact paths in a dict (the common case, one lookup); templated paths by regex."""

    def __init__(self) -> None:
        self._by_key: dict[str, Route] = {}
        self._static: dict[tuple[str, str], Route] = {}
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
        static: dict[tuple[str, str], Route] = {}
        templated: list[Route] = []
        # Oldest first so a later declaration of the same method + path wins.
        for r in self._by_key.values():
            if r.params:
                templated.append(r)
            else:
                static[(r.config.method, r.config.path)] = r
        # Longer templates first: `/a/{x}/b` before `/a/{x:path}`.
        templated.sort(key=lambda r: len(r.config.path), reverse=True)
        self._static, self._templated = static, templated
        self.version += 1

    def match(self, method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
        """(route, path params, path_exists) — path_exists tells 405 from 404."""
        r = self._static.get((method, path))
        if r is not None:
            return r, {}, True
        exists = False
        for r in self._templated:
            m = r.regex.match(path)
            if m is None:
                continue
            if r.config.method == method:
                return r, m.groupdict(), True
            exists = True
        if not exists:
            exists = any(p == path for (_m, p) in self._static)
        return None, {}, exists

    def methods_for(self, path: str) -> list[str]:
        out = {m for (m, p) in self._static if p == path}
        out.update(r.config.method for r in self._templated if r.regex.match(path))
        return sorted(out)
