"""The worker environment contract: what the supervisor sets in every worker process's
environment so that it joins the instance's bus, knows which worker and replica it is, and
notices when the supervisor is gone."""

from __future__ import annotations

import os

from engine._config import EngineConfig, WorkerConfig
from engine._connect import ENV_CREDENTIALS, ENV_REPLICAS, ENV_URL
from engine._instance import Instance
from engine._paths import ENV_CONFIG
from engine.disk import ENV_MIN_FREE, parse_size


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
    env = dict(os.environ)
    env.update(cfg.env)
    env.update(
        {
            ENV_URL: url,
            # Every bucket, stream and object store a worker creates gets the instance's
            # replicas: on a cluster (replicas 3) nothing lives on one node only.
            ENV_REPLICAS: str(cfg.nats.replicas),
            "ENGINE_WORKER_NAME": w.name,
            "ENGINE_WORKER_REPLICA": str(replica),
            "ENGINE_INSTANCE": str(inst.number),
            "ENGINE_DATA_DIR": str(inst.data_dir),
            ENV_MIN_FREE: str(parse_size(cfg.nats.min_free_disk)),
            "ENGINE_SUPERVISOR_PID": str(os.getpid()),
            "ENGINE_BOOT_ID": boot_id,
            "ENGINE_SUPERVISOR_FD": str(lifeline),
            "ENGINE_NAMESPACE": lay.name,
            # The layout's own names (config/engine.yaml), so workers find the instance
            # they belong to with the settings a user would set.
            lay.env("DATA_DIR"): str(inst.data_dir),
            lay.env("INSTANCE"): str(inst.number),
        }
    )
    if config_path:
        env[ENV_CONFIG] = config_path
    for name, port in inst.ports.as_dict().items():
        env[f"ENGINE_PORT_{name.upper()}"] = str(port)
        env[lay.port_env(name)] = str(port)
    if credentials:
        env[ENV_CREDENTIALS] = credentials
    if cfg.nats.domain:
        env["ENGINE_NATS_DOMAIN"] = cfg.nats.domain
    env.update(w.env)
    return env
