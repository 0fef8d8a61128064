"""Where a provider's chat endpoint is and how it wants the key, following upstream's rules
so that the base URLs its users configured reach the same endpoints here.

OpenAI-compatible bases: a base with no path gets `/v1` (`http://localhost:11434` is Ollama's
`/v1/chat/completions`; LM Studio and vLLM serve the same), any other base gets
`/chat/completions` appended as is (`.../v1`, `.../api/paas/v4`). Azure (a host under
`.openai.azure.com`, or `OPENAI_AZURE=true`): a base naming `/openai/deployments/<name>` is the
legacy style with `?api-version=`; anything else is the v1 style, `/openai/v1/chat/completions`.
Anthropic-format bases (Anthropic, MiniMax) get `/v1/messages` (`/messages` after a `/v1`).
"""

from __future__ import annotations

import re
from urllib.parse import urlencode, urlsplit, urlunsplit


def is_azure(base: str) -> bool:
    host = (urlsplit(base).hostname or "").lower()
    return host.endswith(".openai.azure.com")


def chat_url(base: str, *, azure: bool = False, api_version: str = "") -> str:
    parts = urlsplit(base.rstrip("/"))
    path = parts.path.rstrip("/")
    if azure:
        if "/openai/deployments/" in path + "/":
            query = "&".join(q for q in (parts.query, urlencode({"api-version": api_version})) if q)
            return urlunsplit(parts._replace(path=path + "/chat/completions", query=query))
        root = re.sub(r"/?openai(?:/v1)?$", "", path)
        return urlunsplit(parts._replace(path=root + "/openai/v1/chat/completions"))
    if not path:
        path = "/v1"
    return urlunsplit(parts._replace(path=path + "/chat/completions"))


def messages_url(base: str) -> str:
    parts = urlsplit(base.rstrip("/"))
    path = parts.path.rstrip("/")
    path += "/messages" if path.endswith("/v1") else "/v1/messages"
    return urlunsplit(parts._replace(path=path))


def auth_headers(key: str, *, fmt: str, azure: bool = False) -> dict[str, str]:
    if fmt == "anthropic":
        return {"x-api-key": key, "anthropic-version": "2023-06-01"}
    if azure:
        return {"api-key": key}
    return {"Authorization": f"Bearer {key}"}
