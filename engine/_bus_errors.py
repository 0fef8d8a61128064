"""The bus's own errors, as engine errors: what a function catches when NATS or JetStream
could not do something right now, and the one refusal callers act on (a wrong last
sequence), without importing nats-py."""

from __future__ import annotations

import nats.errors

from engine._errors import ErrorCode, FunctionError

WRONG_LAST_SEQUENCE = 10071
"""JetStream's error code for a write whose expected last (subject) sequence did not hold."""


class BusError(FunctionError):
    """NATS or JetStream could not do it right now: no connection, no stream leader, no
    answer in time, a write refused for space. Retryable; `err_code` is JetStream's own
    error code when JetStream answered with one (0 otherwise)."""

    def __init__(self, message: str, *, code: ErrorCode = "UNAVAILABLE", err_code: int = 0) -> None:
        super().__init__(code, message, retryable=True)
        self.err_code = err_code


class WrongLastSequence(FunctionError):
    """A publish with `expect_last_subject_seq` found the subject elsewhere (for 0: the
    subject already holds a message). Not an outage: the same write fails again."""

    def __init__(self, subject: str, description: str = "") -> None:
        super().__init__(
            "CONFLICT",
            f"{subject}: the last sequence was not the expected one"
            + (f" ({description})" if description else ""),
            retryable=False,
        )
        self.subject = subject


BUS_ERRORS: tuple[type[BaseException], ...] = (
    BusError,
    nats.errors.Error,  # what Bucket's older methods still raise as they are
    TimeoutError,
    ConnectionError,
)
"""Every error that means "the bus could not do it right now": `except BUS_ERRORS:`."""


def translate(exc: Exception, what: str) -> FunctionError:
    """nats-py's error for `what` (a phrase: "publish to mem.events.x") as an engine error;
    an engine error passes through."""
    if isinstance(exc, FunctionError):
        return exc
    if isinstance(exc, TimeoutError):  # nats-py's TimeoutError is one too
        return BusError(f"{what}: no answer in time", code="DEADLINE_EXCEEDED")
    if isinstance(exc, nats.errors.NoRespondersError):
        return BusError(f"{what}: JetStream did not answer (no stream, or JetStream is down)")
    err_code = getattr(exc, "err_code", None)
    return BusError(
        f"{what}: {type(exc).__name__}: {exc}",
        err_code=err_code if isinstance(err_code, int) else 0,
    )
