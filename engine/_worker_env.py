"""The worker environment contract: what the supervisor sets in every worker process's
environment so that it joins the instance's bus, knows which worker and replica it is, and
notices when the supervisor is gone."""

from __future__ import annotations

import os
from pathlib import Path

from engine import settings
from engine._config import EngineConfig, WorkerConfig
from engine._instance import Instance
from engine.disk import parse_size


def worker_env(
    cfg: EngineConfig,
    inst: Instance,
    w: WorkerConfig,
    replica: int,
    *,
    url: str,
    credentials: str | None,
    boot_id: str,
    lifeline: int,
    config_path: str | None,
) -> dict[str, str]:
    """The environment of replica `replica` of worker `w`: the supervisor's own, the
    config's `env`, what tells the worker where it belongs and how to reach the bus, then
    the worker's own `env`. `boot_id` is one per start of the instance; `lifeline` the read
    end of the supervisor's lifeline pipe."""
    lay = inst.layout
    env = settings.environ()
    env.update(cfg.env)
    identity = settings.WorkerIdentity(
        nats_url=url,
        credentials=Path(credentials) if credentials else None,
        # Every bucket, stream and object store a worker creates gets the instance's
        # replicas: on a cluster (replicas 3) nothing lives on one node only.
        replicas=cfg.nats.replicas,
        domain=cfg.nats.domain or "",
        config=Path(config_path) if config_path else None,
        min_free_disk=parse_size(cfg.nats.min_free_disk),
        worker=w.name,
        replica=replica,
        instance=inst.number,
        data_dir=inst.data_dir,
        boot_id=boot_id,
        namespace=lay.name,
        supervisor_pid=os.getpid(),
        lifeline_fd=lifeline,
    )
    env.update(identity.environ())  # the names: engine/settings.py, WorkerIdentity
    # The layout's own names (config/engine.yaml), so workers find the instance they belong
    # to with the settings a user would set.
    env[lay.env("DATA_DIR")] = str(inst.data_dir)
    env[lay.env("INSTANCE")] = str(inst.number)
    for name, port in inst.ports.as_dict().items():
        env[f"ENGINE_PORT_{name.upper()}"] = str(port)
        env[lay.port_env(name)] = str(port)
    env.update(w.env)
    return env
