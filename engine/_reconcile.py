"""What the code declares against what JetStream has stored: a stream, KV bucket, object
store or durable consumer that exists with another config is brought to the declared one
in place where JetStream allows it, and refused loudly (ConfigDrift, saying what to do)
where it does not.

Only the fields a declaration gives are compared, so a reader that opens a bucket without
config never reverts someone's declaration, and an unchanged declaration costs nothing but
the info request it always made. What an update may change was measured on the
nats-server 2.15 wheel (raw STREAM.UPDATE, and CONSUMER.CREATE with `action: update`):
- a stream's subjects, limits, discard policy, duplicate window, compression, retention
  between limits and interest, and turning on message TTLs, schedules, deny-delete or
  roll-ups change in place; its storage, retention to or from workqueue, and turning
  those flags off again do not;
- a consumer's ack wait, max ack pending, max deliver, backoff, filter and inactive
  threshold change in place; its deliver and ack policy, replay policy, start sequence or
  time, max waiting, memory storage and push/pull kind do not.
A refusal the table does not foresee is still reported the same way, with the server's
own words.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import Enum
from typing import Any

import msgspec

from engine import _jetstream
from engine._connection import Connection
from engine._errors import FunctionError

log = logging.getLogger("engine.reconcile")

NS = 1_000_000_000
_LIMITS = frozenset(
    {"max_msgs", "max_bytes", "max_msgs_per_subject", "max_msg_size", "max_consumers"}
)
_DURATIONS = frozenset(
    {"max_age", "duplicate_window", "subject_delete_marker_ttl", "ack_wait",
     "inactive_threshold", "idle_heartbeat", "max_expires"}
)  # fmt: skip
_FLAGS = frozenset(
    {"allow_msg_ttl", "allow_msg_schedules", "deny_delete", "deny_purge", "sealed",
     "allow_rollup_hdrs", "allow_direct", "mirror_direct", "no_ack", "discard_new_per_subject",
     "allow_msg_counter", "allow_atomic", "headers_only", "flow_control", "mem_storage"}
)  # fmt: skip
_STRINGS = frozenset({"filter_subject", "description"})
_ONE_WAY = frozenset(
    {"allow_msg_ttl", "allow_msg_schedules", "deny_delete", "deny_purge", "sealed"}
)
"""May be turned on in place, never off again."""
_STREAM_FIXED = frozenset({"storage", "allow_msg_counter", "persist_mode", "mirror"})
_CONSUMER_FIXED = frozenset(
    {"deliver_policy", "opt_start_seq", "opt_start_time", "ack_policy", "replay_policy",
     "max_waiting", "mem_storage", "idle_heartbeat", "flow_control", "deliver_subject"}
)  # fmt: skip


class Drift(msgspec.Struct, frozen=True):
    """One declared field whose stored value differs (in the API's units: durations in
    nanoseconds, "unlimited" as -1)."""

    field: str
    stored: Any
    declared: Any

    def __str__(self) -> str:
        return (
            f"{self.field} {_shown(self.field, self.stored)} -> {_shown(self.field, self.declared)}"
        )


class ConfigDrift(FunctionError):
    """A declaration JetStream cannot apply to what it has stored. Not retryable: the same
    start fails again until the declaration or the stored asset changes; `fix` says how."""

    def __init__(self, what: str, drifts: list[Drift], why: str, fix: str) -> None:
        changes = "; ".join(str(d) for d in drifts)
        super().__init__(
            "CONFLICT",
            f"{what} is stored with another config than declared ({changes}) and JetStream "
            f"cannot change that in place: {why}. {fix}",
            retryable=False,
            field=drifts[0].field if drifts else None,
        )
        self.what = what
        self.drifts = drifts
        self.fix = fix


def _shown(field: str, value: Any) -> str:
    if field in _DURATIONS and isinstance(value, int) and value > 0:
        return f"{value / NS:g}s"
    return repr(value)


def _source(raw: Mapping[str, Any]) -> dict[str, str]:
    out = {"name": str(raw.get("name", "")), "filter_subject": str(raw.get("filter_subject") or "")}
    api = str((raw.get("external") or {}).get("api") or "")
    if api:
        out["api"] = api
    return out


def normal(field: str, value: Any) -> Any:
    """A field's value in one form, whether declared (nats-py's: seconds, enums, None for
    unset) or stored (the API's: nanoseconds, strings, -1 for unlimited)."""
    if isinstance(value, Enum):
        value = value.value
    if field in _LIMITS:
        return -1 if value is None or int(value) <= 0 else int(value)
    if field in _FLAGS:
        return bool(value)
    if field in _STRINGS:
        return value or ""
    if field == "subjects":
        return sorted(value or [])
    if field == "compression":  # the API leaves it out when off
        return value or "none"
    if field == "sources":
        return sorted((_source(s) for s in value or []), key=msgspec.json.encode)
    return value


def declared_wire(field: str, value: Any) -> Any:
    """A declared value (nats-py's units) as the API has it."""
    if field in _DURATIONS:
        return 0 if value is None else round(float(value) * NS)
    if field == "sources":
        return [s.wire() if hasattr(s, "wire") else s for s in value or []]
    return normal(field, value)


def drifts(stored: Mapping[str, Any], declared: Mapping[str, Any]) -> list[Drift]:
    """The declared fields (in API form) whose stored value differs."""
    out = []
    for field, want in declared.items():
        have = stored.get(field)
        if field in _DURATIONS:
            same = int(have or 0) == int(want or 0)
        else:
            same = normal(field, have) == normal(field, want)
        if not same:
            out.append(Drift(field, have, want))
    return out


def stream_refusal(d: Drift) -> str | None:
    """Why JetStream will not make this change to a stream in place; None when it will."""
    if d.field in _STREAM_FIXED:
        return f"{d.field} is fixed when a stream is created"
    if d.field == "retention" and "workqueue" in (normal("", d.stored), normal("", d.declared)):
        return "retention cannot change to or from workqueue"
    if d.field in _ONE_WAY and d.stored and not d.declared:
        return f"{d.field} can be turned on, never off again"
    return None


def consumer_refusal(d: Drift) -> str | None:
    if d.field in _CONSUMER_FIXED:
        return f"a consumer's {d.field} is fixed when it is created"
    return None


def delete_fix(kind: str, target: str, messages: int = 0) -> str:
    lost = f" (its {messages} messages go with it: take a snapshot first)" if messages else ""
    return (
        f"Either declare it as it is stored, or delete the {kind} so that the next start "
        f"creates it as declared{lost}: python -m engine {kind} delete {target}"
    )


async def stream(
    conn: Connection, name: str, declared: Mapping[str, Any], *, what: str = ""
) -> list[Drift]:
    """Bring the existing stream `name` to the `declared` fields (API form); the changes
    made (none: it already was so). Raises ConfigDrift when JetStream cannot apply them."""
    what = what or f"stream {name}"
    config, _ = await _jetstream.raw_stream_info(conn, name)
    found = drifts(config, declared)
    if not found:
        return []
    refused = [(d, why) for d in found if (why := stream_refusal(d)) is not None]
    if refused:
        why = "; ".join(w for _, w in refused)
        fix = delete_fix("stream", name, await _messages(conn, name))
        raise ConfigDrift(what, [d for d, _ in refused], why, fix)
    update = dict(config)
    for d in found:
        update[d.field] = d.declared
    age, window = _int(update.get("max_age")), _int(update.get("duplicate_window"))
    if age and window > age:  # the server refuses a duplicate window longer than max age
        update["duplicate_window"] = age
    try:
        await _jetstream.update_stream(conn, update)
    except FunctionError as err:
        fix = delete_fix("stream", name, await _messages(conn, name))
        raise ConfigDrift(what, found, err.message, fix) from None
    log.warning("%s: %s (updated in place)", what, "; ".join(str(d) for d in found))
    return found


async def consumer(
    conn: Connection, stream_name: str, durable: str, declared: Mapping[str, Any]
) -> list[Drift]:
    """Create the durable consumer as declared (API form), or bring an existing one to it;
    the changes made to an existing one. Raises ConfigDrift for a fixed field, NotFound
    when the stream does not exist."""
    what = f"consumer {durable} of stream {stream_name}"
    stored = await _jetstream.consumer_config(conn, stream_name, durable)
    if stored is None:
        fresh = {k: v for k, v in declared.items() if v != ""}
        await _jetstream.create_consumer(conn, stream_name, durable, fresh, "create")
        return []
    found = drifts(stored, declared)
    if not found:
        return []
    refused = [(d, why) for d in found if (why := consumer_refusal(d)) is not None]
    if refused:
        why = "; ".join(w for _, w in refused)
        fix = (
            "Either declare it as it is stored, or delete the consumer so that the next "
            "start creates it as declared (it then starts from its deliver policy, not "
            f"where it was): python -m engine consumer delete {stream_name} {durable}"
        )
        raise ConfigDrift(what, [d for d, _ in refused], why, fix)
    update = {**stored, **{d.field: d.declared for d in found}}
    try:
        await _jetstream.create_consumer(conn, stream_name, durable, update, "update")
    except FunctionError as err:
        fix = f"delete it so it is made anew: python -m engine consumer delete {stream_name} {durable}"
        raise ConfigDrift(what, found, err.message, fix) from None
    log.warning("%s: %s (updated in place)", what, "; ".join(str(d) for d in found))
    return found


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


async def _messages(conn: Connection, name: str) -> int:
    try:
        return (await _jetstream.stream_info(conn, name)).messages
    except FunctionError:
        return 0
