"""Ids: new record ids, and KV keys for ids that come from outside."""

from __future__ import annotations

import hashlib
import re
import secrets
import time

_KEY_OK = re.compile(r"^[-/_=a-zA-Z0-9]+(?:\.[-/_=a-zA-Z0-9]+)*$")


def kv_key(raw: str) -> str:
    """A KV key for an id from outside (session ids, imported ids): valid keys are kept,
    anything else (spaces, ':', '..', too long) becomes a stable hash."""
    if len(raw) <= 200 and _KEY_OK.match(raw):
        return raw
    return "_h_" + hashlib.sha256(raw.encode()).hexdigest()[:40]


def new_id(prefix: str) -> str:
    return f"{prefix}_{int(time.time() * 1000):x}{secrets.token_hex(6)}"
