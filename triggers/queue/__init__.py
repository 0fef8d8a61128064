"""The `queue` trigger: durable calls through a JetStream work queue, retried, then dead-lettered.

Config keys of a `queue` trigger:

- `queue` (required): queue name, letters, digits, `_` and `-`. One function per queue.
- `concurrency`: calls in flight at once across all replicas (the consumer's
  max_ack_pending), default 8.
- `max_attempts`: deliveries before the message goes to the dead-letter stream, default 5.
- `backoff` / `backoff_max`: first retry delay and its cap in seconds (doubling), 1 / 60.
- `timeout`: seconds one call may take, default 30.

Semantics: at-least-once. A message is acknowledged only after the function replied
successfully. A retryable failure (5xx, deadline, or a crash of the handling process) is
retried after the backoff; a non-retryable 4xx FunctionError, or the last attempt, moves
the message to `DEAD_LETTERS` (subject `dlq.<queue>`) with the error. UNAVAILABLE (no worker
serves the function) waits and retries without dead-lettering. Each call carries
`Idempotency-Key` (the `Nats-Msg-Id` given at enqueue, else `<queue>:<stream seq>`) so
handlers can make redeliveries harmless; enqueueing twice with the same `msg_id` within the
dedup window stores one message.
"""
