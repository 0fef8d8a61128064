"""JetStream's API on the wire: every request and reply the engine sends or reads ($JS.API.*,
publish acks, pull requests), and the results it hands back. The calls that use them are in
engine/_jetstream.py (and the pages of engine/_scan.py); the wire protocol is read here in
one place.

Replies decode into Structs whose fields default, so a field the server leaves out (or a
newer server adds) never fails the decode; only what the engine reads is declared.
"""

from __future__ import annotations

from typing import Any

import msgspec

API = "$JS.API"
"""The subject prefix of JetStream's API in the local domain."""
UNAVAILABLE = 10008
"""JetStream's "system temporarily unavailable": no meta leader yet."""
CONSUMER_NOT_FOUND = 10014
NO_MESSAGE_FOUND = 10037
SEQUENCE_NOT_FOUND = 10043
MESSAGE_NOT_FOUND = 10057
"""STREAM.MSG.DELETE of a sequence that holds no message (deleted already)."""
STREAM_NOT_FOUND = 10059


class ApiError(msgspec.Struct):
    code: int = 0
    err_code: int = 0
    description: str = ""


# ---- results handed to callers ---------------------------------------------------------
class PubAck(msgspec.Struct, frozen=True):
    """JetStream's acknowledgement of a stored message."""

    stream: str
    seq: int
    duplicate: bool = False
    """True when `msg_id` was seen within the stream's duplicate window: nothing was stored
    and `seq` is the first write's."""


class StreamInfo(msgspec.Struct, frozen=True):
    """A stream's state when asked."""

    name: str
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    subjects: int
    """How many distinct subjects hold messages."""
    max_msgs_per_subject: int = -1
    leader: str | None = None
    """The server leading the stream; "" when it has none (a replica of a stream electing
    its leader, or cut off from it, answers with its own state, which may be behind);
    None when the reply did not say."""


class LastMessage(msgspec.Struct, frozen=True):
    """The last message stored on one subject, as a batched direct get returns it."""

    seq: int
    data: bytes
    headers: dict[str, str]


class ExternalApi(msgspec.Struct):
    api: str = ""


class SourceInfo(msgspec.Struct):
    """A source's state as the server reports it (JetStream's StreamSourceInfo)."""

    name: str = ""
    filter_subject: str = ""
    external: ExternalApi | None = None
    lag: int = 0
    active: int | None = None
    """Nanoseconds since the source was last heard from; negative (or absent): not yet."""
    error: ApiError | None = None

    def error_text(self) -> str:
        """The server's last error copying from this source ("" for none)."""
        if self.error is None:
            return ""
        return self.error.description or f"JetStream API error {self.error.code}"


# ---- publish ------------------------------------------------------------------------------
class AckReply(msgspec.Struct):
    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    error: ApiError | None = None


# ---- STREAM.INFO, STREAM.UPDATE, STREAM.PURGE, STREAM.DELETE -------------------------------
class StreamConfigFields(msgspec.Struct):
    name: str = ""
    max_msgs_per_subject: int = -1


class StreamState(msgspec.Struct):
    messages: int = 0
    bytes: int = 0
    first_seq: int = 0
    last_seq: int = 0
    num_subjects: int = 0
    subjects: dict[str, int] | None = None


class ClusterInfo(msgspec.Struct):
    leader: str = ""


class StreamInfoRequest(msgspec.Struct, omit_defaults=True):
    subjects_filter: str = ""
    offset: int = 0


class StreamInfoReply(msgspec.Struct):
    error: ApiError | None = None
    config: StreamConfigFields | None = None
    state: StreamState | None = None
    cluster: ClusterInfo | None = None
    total: int = 0
    offset: int = 0


class RawStreamInfoReply(msgspec.Struct):
    """STREAM.INFO with the config as the server sends it (to send back in an update)."""

    error: ApiError | None = None
    config: dict[str, object] | None = None
    sources: list[SourceInfo] | None = None


class UpdateReply(msgspec.Struct):
    error: ApiError | None = None


class PurgeRequest(msgspec.Struct, omit_defaults=True):
    filter: str = ""


class PurgeReply(msgspec.Struct):
    error: ApiError | None = None
    success: bool = False
    purged: int = 0


class DeleteReply(msgspec.Struct):
    error: ApiError | None = None
    success: bool = False


class MsgDeleteRequest(msgspec.Struct):
    """STREAM.MSG.DELETE: `no_erase` false overwrites the message's bytes on disk."""

    seq: int
    no_erase: bool = False


# ---- STREAM.MSG.GET and DIRECT.GET ----------------------------------------------------------
class MsgGetRequest(msgspec.Struct):
    seq: int


class LastBySubjectRequest(msgspec.Struct):
    last_by_subj: str


class ByTimeRequest(msgspec.Struct):
    start_time: str


class StoredMessage(msgspec.Struct):
    subject: str = ""
    seq: int = 0
    data: str = ""
    """Base64, as the API sends it."""
    time: str = ""
    """When the server stored it: RFC 3339 with nanoseconds."""


class MsgGetReply(msgspec.Struct):
    error: ApiError | None = None
    message: StoredMessage | None = None


class MultiLastRequest(msgspec.Struct, frozen=True):
    """A batched direct get: the last message of each subject."""

    multi_last: list[str]


# ---- CONSUMER.INFO, CONSUMER.CREATE, CONSUMER.MSG.NEXT --------------------------------------
class ConsumerInfoReply(msgspec.Struct):
    error: ApiError | None = None
    config: dict[str, object] | None = None


class ConsumerCreateRequest(msgspec.Struct):
    stream_name: str
    config: dict[str, Any]
    action: str
    """create (refused if it exists with another config) or update."""


class PullRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    """A pull request: up to `batch` messages. `no_wait`: what is there now, then 404 (the
    scan's last page must not wait out `expires`); else the server answers 408 at `expires`
    (ns) if fewer came."""

    batch: int
    expires: int
    no_wait: bool = False
