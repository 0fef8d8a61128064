"""What a function declares beside its types: its REST route (`Http`) and its MCP tool
(`Tool`). One declaration per operation: the worker serves the function on the bus,
stores the route as an `http` trigger, and publishes both in its `$SRV.INFO` metadata,
where the OpenAPI document, the MCP tool list and the console read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import msgspec

Source = Literal["body", "query", "path", "merge", "none"]
F = TypeVar("F", bound=Callable[..., Any])

MiB = 1024 * 1024
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Http(msgspec.Struct, omit_defaults=True):
    """A function's REST route. The http trigger builds the request object from `source`
    and decodes it into the function's request type on the worker (a 400 names the field),
    and sends the function's reply as the JSON body."""

    method: str
    path: str
    """starlette-style path: `{param}`, `{param:path}`, `{n:int}` segments."""
    source: Source | None = None
    """Where the request object comes from: the JSON `body`, the `query` string, the `path`
    parameters, `merge` (query, then body, then path parameters, later ones winning) or
    `none` (an empty object). Default: body for POST/PUT/PATCH/DELETE, else query. Path
    parameters are always merged in."""
    status: int = 200
    """Status of a successful reply."""
    status_field: str = ""
    status_by: dict[str, int] = msgspec.field(default_factory=dict)
    """Where one operation has several success statuses: the reply field `status_field`
    whose value picks one from `status_by` (others get `status`)."""
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    """Request header (lower case) -> request field, filled from the header when the
    request leaves the field out or empty."""
    auth: Literal["bearer", "none"] = "bearer"
    max_body: int = MiB
    timeout: float | None = None
    """Seconds; default the function's own timeout."""
    accept: str = ""
    """A media type (`text/html`): this route answers requests that accept it; the route of
    the same method and path without `accept` answers the others."""
    summary: str = ""
    """OpenAPI summary; default the function's description."""
    tags: list[str] = msgspec.field(default_factory=list)
    mode: Literal["body", "http"] = "body"
    """`http`: the function gets the whole `engine.HttpRequest` and returns an
    `engine.HttpResponse` (a page, a redirect) instead of a request and a reply object."""
    response_schema: dict[str, Any] | None = None
    """OpenAPI schema of an `http`-mode reply (a body-mode reply's is its type's)."""

    def __post_init__(self) -> None:
        self.method = self.method.upper()
        if not self.path.startswith("/"):
            raise ValueError(f"route path {self.path!r} must start with '/'")
        if self.source is None:
            self.source = "body" if self.method in _WRITES else "query"

    def trigger_config(self, description: str, timeout: float) -> dict[str, Any]:
        """The `http` trigger declaration of this route."""
        cfg: dict[str, Any] = msgspec.to_builtins(self)
        cfg["mode"] = self.mode
        cfg.setdefault("summary", description)
        cfg["timeout"] = self.timeout if self.timeout is not None else timeout
        return cfg


class Tool(msgspec.Struct, omit_defaults=True):
    """A function's MCP tool: its arguments are the function's request object."""

    name: str
    description: str = ""
    """What the model reads; default the function's description."""
    tier: str = "all"
    """Which tool sets list it (an MCP server's setting picks the set, e.g. core, basic)."""


class NoArgs(msgspec.Struct):
    """The request of an operation that takes none: any object, fields ignored."""


class Declared(msgspec.Struct, kw_only=True):
    """What `operation` attaches to a method, for `Worker.serve`."""

    function_id: str
    description: str = ""
    timeout: float = 30.0
    http: Http | None = None
    tool: Tool | None = None


_ATTR = "__engine_operation__"


def operation(
    function_id: str,
    *,
    description: str = "",
    timeout: float = 30.0,
    http: Http | None = None,
    tool: Tool | None = None,
) -> Callable[[F], F]:
    """Mark a method of a service object as the operation `function_id`; `Worker.serve(obj)`
    registers every marked method of `obj`. The request and response types come from the
    method's annotations (`async def op(self, req: In) -> Out`, optionally `ctx: Context`)."""

    def mark(fn: F) -> F:
        setattr(
            fn,
            _ATTR,
            Declared(
                function_id=function_id,
                description=description or (fn.__doc__ or "").strip().split("\n\n")[0],
                timeout=timeout,
                http=http,
                tool=tool,
            ),
        )
        return fn

    return mark


def declared(obj: object) -> list[tuple[Declared, Callable[..., Any]]]:
    """The marked methods of `obj`, bound, in definition order."""
    out: list[tuple[Declared, Callable[..., Any]]] = []
    seen: set[str] = set()
    for klass in type(obj).__mro__:
        for name, member in vars(klass).items():
            decl = getattr(member, _ATTR, None)
            if isinstance(decl, Declared) and name not in seen:
                seen.add(name)
                out.append((decl, getattr(obj, name)))
    return out
