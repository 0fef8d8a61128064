"""Which instance a command talks to, and a small REST client for it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from engine.paths import Instance

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = ROOT / "config" / "engine.yaml"


class ServiceError(Exception):
    """The REST service refused or is unreachable; the message says what to do."""


@dataclass
class Target:
    instance: Instance
    url: str
    secret: str

    @classmethod
    def resolve(
        cls, data_dir: str | None = None, port: int | None = None, instance: int | None = None
    ) -> Target:
        number = (
            instance
            if instance is not None
            else int(os.environ.get("AGENTMEMORY_INSTANCE", "0") or 0)
        )
        inst = Instance.resolve(number, data_dir, port)
        url = os.environ.get("AGENTMEMORY_URL") or f"http://127.0.0.1:{inst.ports.rest}"
        return cls(inst, url.rstrip("/"), read_secret())

    def engine_args(self) -> list[str]:
        return [
            "--data-dir",
            str(self.instance.data_dir),
            "--instance",
            str(self.instance.number),
            "--port",
            str(self.instance.ports.rest - 100 * self.instance.number),
        ]

    def client(self, timeout: float = 30.0) -> Rest:
        return Rest(self.url, self.secret, timeout)


def secret_path() -> Path:
    return Path.home() / ".agentmemory" / "secret"


def read_secret() -> str:
    env = os.environ.get("AGENTMEMORY_SECRET")
    if env:
        return env
    try:
        return secret_path().read_text().strip()
    except OSError:
        return ""


class Rest:
    def __init__(self, url: str, secret: str, timeout: float) -> None:
        headers = {"Content-Type": "application/json"}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        self.url = url
        self._http = httpx.Client(base_url=url, headers=headers, timeout=timeout)

    def __enter__(self) -> Rest:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def call(
        self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None
    ) -> Any:
        try:
            resp = self._http.request(method, path, json=body, params=query)
        except httpx.HTTPError as exc:
            raise ServiceError(
                f"agentmemory is not reachable at {self.url} ({type(exc).__name__}); "
                "start it with `agentmemory start --detach`"
            ) from None
        try:
            data = resp.json() if resp.content else None
        except ValueError:
            data = resp.text
        if resp.status_code == 401:
            raise ServiceError(
                "unauthorized: the server's secret is in ~/.agentmemory/secret "
                "(or set AGENTMEMORY_SECRET)"
            )
        if resp.status_code >= 400:
            err = data.get("error") if isinstance(data, dict) else data
            if isinstance(err, dict):
                field = f" (field `{err['field']}`)" if err.get("field") else ""
                err = f"{err.get('message') or err.get('code')}{field}"
            raise ServiceError(f"{method} {path} failed with HTTP {resp.status_code}: {err}")
        return data

    def alive(self) -> bool:
        try:
            return self._http.get("/agentmemory/livez", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False
