"""Which instance a command talks to, how to name it again in a hint, and a small REST
client for it."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from engine.paths import Instance, Ports, current_layout, default_data_dir
from engine.settings import engine_settings, is_set
from triggers.http.secret import given_secret
from workers.cli.settings import cli_settings

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = (ROOT / "pyproject.toml").exists()
"""Run from the repository (tests, `make run`) rather than from an installed wheel."""


class ServiceError(Exception):
    """The REST service refused or is unreachable; the message says what to do."""


@dataclass
class Target:
    instance: Instance
    url: str
    secret: str
    # The server was named by --url or AGENTMEMORY_URL rather than derived from the
    # instance: it may be on another machine, so hints never suggest starting it here.
    remote: bool = False
    data_dir_given: bool = False

    @classmethod
    def resolve(
        cls,
        data_dir: str | None = None,
        port: int | None = None,
        instance: int | None = None,
        url: str | None = None,
        *,
        local: bool = False,
    ) -> Target:
        """`local`: the command acts on the instance itself (start, stop, console), so a
        server named by --url or AGENTMEMORY_URL is not the one meant."""
        lay = current_layout()
        number_given = instance is not None or is_set(lay.env("INSTANCE"))
        number = instance if instance is not None else lay.default_instance()
        inst = Instance.resolve(number, data_dir, port)
        if not data_dir and not is_set(lay.env("DATA_DIR")) and inst.running_pid() is None:
            # Started elsewhere (--data-dir, or AGENTMEMORY_DATA_DIR in another shell):
            # `start` noted where, so `--instance K` alone still finds it.
            noted = registered_data_dir(number)
            if noted is not None:
                found = Instance.resolve(number, noted, port)
                if found.running_pid() is not None:  # a note of a stopped one is history
                    inst = found
        port_given = port is not None or is_set(lay.env("PORT"))
        inst = _as_running(inst, number_given, port_given)
        explicit = None if local else url or cli_settings().url
        rest = explicit or f"http://127.0.0.1:{inst.ports.rest}"
        return cls(inst, rest.rstrip("/"), read_secret(), bool(explicit), bool(data_dir))

    @property
    def anchor(self) -> int:
        return self.instance.ports.rest - 100 * self.instance.number

    def engine_args(self) -> list[str]:
        return [
            "--data-dir",
            str(self.instance.data_dir),
            "--instance",
            str(self.instance.number),
            "--port",
            str(self.anchor),
        ]

    def flags(self, *, local: bool = False) -> list[str]:
        """The options that select this instance again from any shell; `local` for the
        commands that act on the instance itself (start, stop), which take no --url."""
        number = self.instance.number
        out: list[str] = []
        if number:
            out += ["--instance", str(number)]
        if self.anchor != current_layout().anchor:
            out += ["--port", str(self.anchor)]
        if self.data_dir_given or self.instance.data_dir != default_data_dir(number).resolve():
            out += ["--data-dir", str(self.instance.data_dir)]
        if self.remote and not local:
            out += ["--url", self.url]
        return out

    def selection_env(self) -> dict[str, str]:
        """The variables that make a process started elsewhere (an agent's MCP server, a
        printed config) reach this same server: none for the default instance."""
        if self.remote:
            return {"AGENTMEMORY_URL": self.url}
        lay, number = self.instance.layout, self.instance.number
        data = self.instance.data_dir
        xdg = engine_settings().data_home
        pristine = ((xdg or Path.home() / ".local" / "share") / lay.name).resolve()
        env: dict[str, str] = {}
        root = data.parent if number and data.name == f"instance-{number}" else data
        if number and root == data:
            # A data dir of its own, outside the layout's: named exactly, with the block's
            # first port as its anchor (instance 0 of that data dir resolves to both).
            return {lay.env("DATA_DIR"): str(data), lay.env("PORT"): str(self.instance.ports.rest)}
        if number:
            env[lay.env("INSTANCE")] = str(number)
        if root != pristine:
            env[lay.env("DATA_DIR")] = str(root)
        if self.anchor != lay.anchor:
            env[lay.env("PORT")] = str(self.anchor)
        return env

    def hint(self, command: str, *, local: bool = False) -> str:
        """`agentmemory <command>` with this instance's flags, ready to copy and paste."""
        return shlex.join(["agentmemory", *shlex.split(command), *self.flags(local=local)])

    def start_hint(self) -> str:
        if self.remote:
            return f"check that agentmemory runs at {self.url}"
        return f"start it with `{self.hint('start --detach', local=True)}`"

    def client(self, timeout: float = 30.0) -> Rest:
        return Rest(self.url, self.secret, timeout, self.start_hint())


def _as_running(inst: Instance, number_given: bool, port_given: bool) -> Instance:
    """What the running engine in this data dir recorded wins over computed defaults: it
    may have been started with another --port or --instance than this command was given."""
    info = inst.read_pidfile()
    if port_given or not info or inst.running_pid() is None:
        return inst
    number = info.get("instance")
    ports = info.get("ports")
    if not isinstance(number, int) or not isinstance(ports, dict):
        return inst
    if number_given and number != inst.number:
        return inst
    if not all(isinstance(v, int) for v in ports.values()) or "rest" not in ports:
        return inst  # a pidfile from another version of the engine
    return Instance(number, inst.data_dir, Ports(ports), inst.layout)


# ---- where `start` put each instance ----------------------------------------------
def registry_dir() -> Path:
    return Path.home() / ".agentmemory" / "instances"


def register(inst: Instance) -> None:
    """Note instance K's data dir, so later commands find it with `--instance K` alone."""
    folder = registry_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{inst.number}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"data_dir": str(inst.data_dir)}))
    os.replace(tmp, path)


def registered_data_dir(number: int) -> str | None:
    try:
        noted = json.loads((registry_dir() / f"{number}.json").read_text())
    except (OSError, ValueError):
        return None
    value = noted.get("data_dir") if isinstance(noted, dict) else None
    return value if isinstance(value, str) and value else None


# ---- the secret and REST -----------------------------------------------------------
def secret_path() -> Path:
    return Path.home() / ".agentmemory" / "secret"


def read_secret() -> str:
    given = given_secret()
    if given:
        return given
    try:
        return secret_path().read_text().strip()
    except OSError:
        return ""


class Rest:
    def __init__(self, url: str, secret: str, timeout: float, start_hint: str = "") -> None:
        headers = {"Content-Type": "application/json"}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        self.url = url
        self._start_hint = start_hint or "start it with `agentmemory start --detach`"
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
                f"{self._start_hint}"
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

    def authorized(self) -> bool | None:
        """Does the server accept our secret? None when it does not answer."""
        try:
            code = self._http.get("/agentmemory/sessions", params={"limit": "1"}).status_code
        except httpx.HTTPError:
            return None
        return code != 401
