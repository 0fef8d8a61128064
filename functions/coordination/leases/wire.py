"""Leases' wire: acquire, release and renew (one request shape), and upstream's replies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from functions.coordination.actions.wire import ActionView
from functions.coordination.inputs import Id, Millis, Text
from functions.coordination.records import Lease
from functions.kernel.views import view

# To the type checker a view is its record (the same attributes); at run time it is the
# camelCase type `view` makes (functions.kernel.views).
if TYPE_CHECKING:
    LeaseView = Lease
else:
    LeaseView = view(Lease)


class LeaseIn(msgspec.Struct, rename="camel", kw_only=True):
    action_id: Id
    agent_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
    ttl_ms: Millis | None = None
    """Acquire and renew: default 10 minutes, at most 1 hour; whole seconds, rounded up."""
    result: Text | None = None
    """Release: the outcome; a release with a result marks the action done."""


class LeaseOpIn(LeaseIn, rename="camel", kw_only=True):
    operation: Literal["acquire", "release", "renew"]


class LeaseOut(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Upstream's reply shapes: `{success: true, lease, renewed}` (acquire), `{success:
    true, lease}` (renew), `{success: true, released: true}`, and a refusal `{success:
    false, error, heldBy?, expiresAt?}` (HTTP 409)."""

    success: bool
    lease: LeaseView | None = None
    renewed: bool | None = None
    released: bool | None = None
    message: str = ""
    error: str = ""
    held_by: str = ""
    expires_at: str = ""
    blockers: list[str] | None = None
    action: ActionView | None = None
