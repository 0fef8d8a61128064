"""The engine console: a loopback web app to inspect and operate a running engine.

Run by the supervisor as `python -m workers.console` (add it to config/engine.yaml); it
serves http://127.0.0.1:$AGENTMEMORY_CONSOLE_PORT (3114) and asks for the REST secret once.

Pages (static/, no build step): Workers, Functions (schema, invoke, link to the trace),
Triggers (fire a cron now, send a test HTTP request), KV (view, edit and delete with the
revision), Streams (live tail), Queues (dead letters: redrive, discard), Traces (search,
waterfall), Logs (by trace).

JSON API, `Authorization: Bearer <secret>` or the session cookie:
  GET  /api/workers, /api/functions, /api/triggers
  POST /api/invoke {function_id, payload, timeout?} -> {ok, result|error, trace_id}
  POST /api/triggers/cron/{id}/fire, /api/triggers/http-test {method, path, body?, query?}
  GET  /api/kv, /api/kv/{bucket}?prefix=, /api/kv/{bucket}/{key}
  PUT  /api/kv/{bucket}/{key} {value, revision, json?}; DELETE ...?revision=
  GET  /api/streams, /api/streams/{name}/messages?last=, /api/streams/{name}/tail (SSE)
  GET  /api/queues, /api/queues/dead?queue=; POST /api/queues/dead/{redrive,discard}
  GET  /api/traces?function=&status=&min_ms=, /api/traces/{id}, /api/logs?trace_id=
Environment: CONSOLE_MAX_SPANS (20000) and CONSOLE_MAX_LOGS (5000) bound what it holds.
"""
