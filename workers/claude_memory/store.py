"""The memory tool's files as memories, over agentmemory's REST API.

A file is the current memory of type `memory_file` in the tool's project whose title is its
path (also in `files`). Writing a file saves a new version superseding the one before
(`remember` with `supersedes`; `distinct`, so a file never replaces another that merely
looks alike); a rename is a version under the new path; deleting forgets every version.
Every write goes through `remember`, so the text is scrubbed before it is stored and the
file is indexed, shown in the viewer and shared by the team rules like any memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from anthropic.lib.tools import ToolError

from workers.cli.settings import cli_settings
from workers.cli.target import read_secret

FILE_TYPE = "memory_file"
CONCEPT = "claude-memory-tool"
DEFAULT_URL = "http://127.0.0.1:3111"
PAGE = 500


@dataclass(frozen=True)
class MemoryFile:
    id: str
    path: str
    text: str
    version: int

    @property
    def size(self) -> int:
        return len(self.text.encode())


class MemoryFiles:
    """The files of one project (and agent) of one agentmemory server."""

    def __init__(
        self,
        *,
        project: str,
        agent_id: str,
        url: str | None = None,
        secret: str | None = None,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.project, self.agent_id = project, agent_id
        base = (url or cli_settings().url or DEFAULT_URL).rstrip("/")
        token = read_secret() if secret is None else secret
        headers = {"Content-Type": "application/json", "X-Agent-Id": agent_id}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.http = http or httpx.Client(base_url=base, headers=headers, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self.http.request(method, f"/agentmemory/{path}", **kw)
        except httpx.HTTPError as exc:
            raise ToolError(f"agentmemory is not reachable: {exc}") from None
        if r.status_code >= 400:
            try:
                err = r.json().get("error")
            except ValueError:
                err = None
            message = err.get("message") if isinstance(err, dict) else err or r.text[:300]
            raise ToolError(f"agentmemory refused the change ({r.status_code}): {message}")
        return r.json()

    def files(self) -> dict[str, MemoryFile]:
        """Every current file, by path."""
        out: dict[str, MemoryFile] = {}
        cursor = ""
        while True:
            params: dict[str, Any] = {
                "project": self.project, "type": FILE_TYPE, "limit": PAGE, "agentId": self.agent_id,
            }  # fmt: skip
            if cursor:
                params["cursor"] = cursor
            page = self._call("GET", "memories", params=params)
            for m in page.get("memories") or []:
                path = str(m.get("title") or "")
                if path and path not in out:  # newest first: the newest version of a path wins
                    out[path] = MemoryFile(
                        id=str(m["id"]),
                        path=path,
                        text=str(m.get("content") or ""),
                        version=int(m.get("version") or 1),
                    )
            cursor = page.get("nextCursor") or ""
            if not cursor:
                return out

    def write(self, path: str, text: str, previous: MemoryFile | None = None) -> MemoryFile:
        """Save `text` as `path`: a new memory, or the next version of `previous`."""
        if not text.strip():
            raise ToolError(
                "agentmemory keeps a file with some text in it: write its first line too"
            )
        body: dict[str, Any] = {
            "content": text,
            "title": path,
            "type": FILE_TYPE,
            "project": self.project,
            "agentId": self.agent_id,
            "files": [path],
            "concepts": [CONCEPT],
            "distinct": True,
        }
        if previous is not None:
            body["supersedes"] = previous.id
        m = self._call("POST", "remember", json=body)["memory"]
        return MemoryFile(id=m["id"], path=path, text=m["content"], version=int(m["version"]))

    def delete(self, f: MemoryFile) -> int:
        """Forget the file with every older version; how many records went."""
        got = self._call("GET", f"memories/{f.id}")
        ids = [f.id, *(str(v["id"]) for v in got.get("versions") or [])]
        out = self._call("POST", "forget", json={"memoryIds": ids, "reason": "memory tool delete"})
        return int(out.get("deleted") or 0)
