"""What every host's hook shares: settings, the HTTP call, ids, capture rules, the context
it prints. Whether a request is sent now or spooled for later is `_delivery`'s.

Standard library only and few imports: a hook is a fresh process per agent event, so its
start-up time is the agent's latency. `_wire` keeps `json`, `re`, `socket` and `typing` out of
the fast path.
"""

from __future__ import annotations

import os
import sys
import time

# `typing` costs ~4 ms of start-up; annotations are strings here, so only mypy needs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Imported as workers.hooks.* (CLI, tests) or run as a script, whose folder is sys.path[0]:
# the script never imports the package (its __init__ would load pathlib and more). mypy
# reads the package form; at run time TYPE_CHECKING is False and `__package__` decides.
if TYPE_CHECKING or __package__:
    from workers.hooks import _settings, _wire
else:
    import _settings
    import _wire

Settings = _settings.Settings
"""The hook's view of its environment (workers/hooks/_settings.py)."""


# ---- what to capture ---------------------------------------------------------------
OWN_TOOL_PREFIX = "memory_"
OWN_TOOL_NAMES = ("toolsearch", "listmcpresources", "fetchmcpresource")
"""Calls never recorded (upstream #1452): our own MCP tools, `memory_*` (an agent saving a
memory is not an event to remember again), and the hosts' tool-discovery calls."""
_NAME_SEPARATORS = ("__", ".", "/", ":", "-")


def own_tool(tool_name: str) -> bool:
    """A tool of agentmemory's MCP server, or tool discovery, however the host prefixes a
    server's tools (`mcp__agentmemory__memory_save`, `agentmemory-memory_save`, ...).
    Plain string tests: `fnmatch` would load `re` into every hook."""
    low = tool_name.lower()
    if "agentmemory" in low:
        return True
    bare = low
    for sep in _NAME_SEPARATORS:
        bare = bare.rsplit(sep, 1)[-1]
    return bare.startswith(OWN_TOOL_PREFIX) or bare in OWN_TOOL_NAMES


def captured(settings: Settings, tool_name: str, tool_input: Any) -> bool:
    """Deny wins over allow; globs match the tool name or any file path in the input. Our
    own MCP tools are skipped unless an allow glob names the tool itself."""
    if own_tool(tool_name):
        if not settings.allow:
            return False
        from fnmatch import fnmatchcase

        if not any(fnmatchcase(tool_name, g) for g in settings.allow):
            return False
    if not settings.allow and not settings.deny:
        return True
    from fnmatch import fnmatchcase

    subjects = [tool_name, *tool_paths(tool_input)]
    if any(fnmatchcase(s, g) for s in subjects for g in settings.deny):
        return False
    if settings.allow:
        return any(fnmatchcase(s, g) for s in subjects for g in settings.allow)
    return True


def tool_paths(tool_input: Any) -> list[str]:
    if not isinstance(tool_input, dict):
        return []
    keys = ("file_path", "path", "notebook_path", "filePath")
    return [v for k in keys if isinstance(v := tool_input.get(k), str) and v]


def cap(value: Any, limit: int) -> Any:
    """The same JSON value with every long string cut: a Write of a large file must not
    turn into a request body the server refuses as too large."""
    if isinstance(value, str):
        return truncate(value, limit)
    if isinstance(value, dict):
        return {k: cap(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [cap(v, limit) for v in value]
    return value


def truncate(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else _wire.dumps(value)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n…[truncated {len(text) - limit} chars]"


# ---- identity ----------------------------------------------------------------------
def now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def project_of(settings: Settings, cwd: str) -> str:
    """The project an event of `cwd` belongs to: AGENTMEMORY_PROJECT_NAME when set, else the
    repository's name, so every worktree and subfolder of one repository shares one memory;
    outside a repository, the folder's own name."""
    if settings.project:
        return settings.project
    path = os.path.abspath(cwd or os.getcwd())
    probe = path
    while True:
        dotgit = os.path.join(probe, ".git")
        if os.path.exists(dotgit):
            return repository_name(probe, dotgit)
        parent = os.path.dirname(probe)
        if parent == probe:
            return os.path.basename(path) or "default"
        probe = parent


def repository_name(top: str, dotgit: str) -> str:
    """The name of the repository whose checkout is `top`: the main worktree's folder name,
    what `git rev-parse --git-common-dir` names (upstream #1387), read from git's own files
    rather than by running git (a hook's start-up is the agent's latency).

    A linked worktree's `.git` is a file naming its git dir, whose `commondir` file leads to
    the main repository's git dir; a submodule's or a `--separate-git-dir` checkout's git dir
    has no `commondir`, and the checkout's folder names it, as a main checkout's does."""
    own = os.path.basename(top) or top
    if not os.path.isfile(dotgit):
        return own
    try:
        with open(dotgit) as f:
            line = f.read(4096).strip()
        if not line.startswith("gitdir:"):
            return own
        gitdir = os.path.join(top, line[len("gitdir:") :].strip())
        with open(os.path.join(gitdir, "commondir")) as f:
            common = os.path.realpath(os.path.join(gitdir, f.read(4096).strip()))
    except OSError:
        return own
    name = os.path.basename(common)
    if name == ".git" or name.startswith("."):  # <repo>/.git, or a layout such as <repo>/.bare
        return os.path.basename(os.path.dirname(common)) or own
    return name.removesuffix(".git") or own  # a bare repository, repo.git


def stable_id(*parts: Any) -> str:
    """An event id for host events that carry none: same inputs, same id, so a spooled
    event replayed later is recognised as the one already sent."""
    from _sha256 import sha256  # the builtin module: hashlib would load OpenSSL

    raw = _wire.dumps(parts, sort_keys=True)
    digest: str = sha256(raw.encode()).hexdigest()
    return "h-" + digest[:32]


# ---- HTTP --------------------------------------------------------------------------
class Reply:
    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body

    def json(self) -> Any:
        try:
            return _wire.loads(self.body or b"null")
        except ValueError:
            return None


def request(
    settings: Settings, method: str, path: str, body: Any, timeout: float | None = None
) -> Reply | None:
    """One HTTP exchange; None when the server is unreachable or too slow."""
    data = b"" if body is None else _wire.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}
    if settings.secret:
        headers["Authorization"] = "Bearer " + settings.secret
    wait = settings.timeout if timeout is None else timeout
    try:
        if settings.url.startswith("https://"):
            return _https(settings.url + path, method, headers, data, wait)
        return _http(settings.url, method, path, headers, data, wait)
    except (OSError, ValueError):
        return None


def _http(
    base: str, method: str, path: str, headers: dict[str, str], data: bytes, wait: float
) -> Reply:
    # A raw socket: http.client costs ~40 ms of imports, more than the whole exchange.
    rest = base.removeprefix("http://")
    hostport, _, prefix = rest.partition("/")
    host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "80")
    host = host.strip("[]")
    deadline = time.monotonic() + wait
    target = ("/" + prefix if prefix else "") + path
    head = f"{method} {target} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    sock = _wire.connect(host, int(port), wait)
    try:
        sock.sendall(head.encode() + data)
        chunks: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply in time")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    raw = b"".join(chunks)
    header, _, body = raw.partition(b"\r\n\r\n")
    lines = header.split(b"\r\n")
    status = int(lines[0].split()[1])
    if any(h.lower().startswith(b"transfer-encoding:") and b"chunked" in h.lower() for h in lines):
        body = _unchunk(body)
    return Reply(status, body)


def _unchunk(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += body[:size]
        body = body[size + 2 :]
    return bytes(out)


def _https(url: str, method: str, headers: dict[str, str], data: bytes, wait: float) -> Reply:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=wait) as resp:
            return Reply(resp.status, resp.read())
    except urllib.error.HTTPError as err:
        return Reply(err.code, err.read())


# ---- stdin and stdout ------------------------------------------------------------------
def read_stdin() -> dict[str, Any]:
    try:
        data = _wire.loads(sys.stdin.buffer.read() or b"{}")
    except (ValueError, OSError):
        return {}
    return data if isinstance(data, dict) else {}
