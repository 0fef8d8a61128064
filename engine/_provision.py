"""Provisioning: the buckets, streams and triggers config/engine.yaml declares, and the
bounded streams of spans and log records the console reads, made at every start before any
worker runs."""

from __future__ import annotations

from nats.js.api import DiscardPolicy, RetentionPolicy

from engine._client import Client
from engine._config import EngineConfig
from engine._logs import LOGS_STREAM, LOGS_SUBJECT
from engine._tracing import TRACES_STREAM, TRACES_SUBJECT
from engine._triggers import TRIGGERS_BUCKET, TriggerSpec


async def provision(client: Client, cfg: EngineConfig) -> None:
    """Make what config/engine.yaml declares, or bring what exists to it."""
    reps = cfg.nats.replicas
    # Declared here, so made as declared or brought to it (engine/_reconcile.py): a
    # config changed between runs changes the stored stream or bucket, or the start
    # fails saying what JetStream cannot change in place.
    for b in cfg.buckets:
        await client.bucket(
            b.name,
            history=b.history,
            ttl=b.ttl or 0,
            replicas=reps,
            max_bytes=b.max_bytes or -1,
        )
    for s in cfg.streams:
        await client.stream(
            s.name,
            subjects=s.subjects,
            retention=RetentionPolicy(s.retention),
            max_age=s.max_age or 0,
            max_bytes=s.max_bytes or -1,
            max_msgs=s.max_msgs or -1,
            num_replicas=reps,
            allow_msg_schedules=s.allow_msg_schedules,
        ).ensure()
    # Bounded streams the console reads: spans and log records of every process.
    for name, subject, age, size in (
        (TRACES_STREAM, f"{TRACES_SUBJECT}.>", 24 * 3600, 256 * 2**20),
        (LOGS_STREAM, f"{LOGS_SUBJECT}.>", 24 * 3600, 128 * 2**20),
    ):
        await client.stream(
            name,
            subjects=[subject],
            max_age=age,
            max_bytes=size,
            num_replicas=reps,
            discard=DiscardPolicy.OLD,
        ).ensure()
    if cfg.triggers:
        store = await client.bucket(TRIGGERS_BUCKET, history=5, replicas=reps)
        for t in cfg.triggers:
            spec = TriggerSpec(
                kind=t.kind,
                function_id=t.function_id,
                config=t.config,
                id=t.id,
                worker="config",
            )
            await store.put(spec.key, spec)
