"""`agentmemory demo`: three realistic coding sessions, then the searches that find them.

Event ids are fixed, so running the demo twice stores each event once.
"""

from __future__ import annotations

from typing import Any

from workers.cli.target import Rest

PROJECT = "demo-shop-api"
CWD = "/home/demo/src/demo-shop-api"

# (hook, data) per event; tool events carry their own tool_use_id
Event = tuple[str, dict[str, Any], str]

SESSIONS: dict[str, list[Event]] = {
    "demo-jwt-auth": [
        (
            "prompt_submit",
            {
                "prompt": "Add JWT authentication to the Express API. Access tokens should expire after 15 minutes and we need refresh tokens."
            },
            "demo-jwt-1",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Read",
                "tool_input": {"file_path": "src/middleware/auth.ts"},
                "tool_output": "export function requireUser(req, res, next) { /* TODO: sessions */ next() }",
            },
            "toolu_demo_jwt_read",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Edit",
                "tool_input": {
                    "file_path": "src/middleware/auth.ts",
                    "old_string": "/* TODO: sessions */",
                    "new_string": "const token = req.headers.authorization?.split(' ')[1]; jwt.verify(token, publicKey, { algorithms: ['RS256'] })",
                },
                "tool_output": "Updated src/middleware/auth.ts: requireUser now verifies RS256 JWT access tokens",
            },
            "toolu_demo_jwt_edit",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Write",
                "tool_input": {
                    "file_path": "src/auth/refresh.ts",
                    "content": "rotate refresh token, store in httpOnly cookie, expiresIn: '15m' for access tokens",
                },
                "tool_output": "Created src/auth/refresh.ts",
            },
            "toolu_demo_jwt_write",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "npm test -- auth"},
                "tool_output": "PASS test/auth.test.ts (12 tests) — expired JWT rejected with 401, refresh token rotation works",
            },
            "toolu_demo_jwt_test",
        ),
    ],
    "demo-n-plus-one": [
        (
            "prompt_submit",
            {"prompt": "GET /orders takes 2 seconds. Find out why and fix it."},
            "demo-n1-1",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "python -m app.profile /orders"},
                "tool_output": "101 SQL queries for 100 orders: SELECT * FROM order_items WHERE order_id = ? repeated per order (N+1 query)",
            },
            "toolu_demo_n1_profile",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Read",
                "tool_input": {"file_path": "app/repositories/orders.py"},
                "tool_output": "orders = session.scalars(select(Order)).all()\nfor o in orders: o.items  # lazy load",
            },
            "toolu_demo_n1_read",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Edit",
                "tool_input": {
                    "file_path": "app/repositories/orders.py",
                    "old_string": "select(Order)",
                    "new_string": "select(Order).options(selectinload(Order.items))",
                },
                "tool_output": "Updated app/repositories/orders.py: eager-load order items with selectinload to fix the N+1 query",
            },
            "toolu_demo_n1_edit",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Bash",
                "tool_input": {
                    "command": "pytest tests/test_orders.py && python -m app.profile /orders"
                },
                "tool_output": "5 passed; 2 SQL queries, GET /orders now 40 ms",
            },
            "toolu_demo_n1_verify",
        ),
    ],
    "demo-rate-limit": [
        (
            "prompt_submit",
            {"prompt": "Add rate limiting to POST /login: at most 5 attempts per minute per IP."},
            "demo-rl-1",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Write",
                "tool_input": {
                    "file_path": "src/middleware/rateLimit.ts",
                    "content": "token bucket in Redis (INCR + EXPIRE 60) keyed by ip; 429 with Retry-After",
                },
                "tool_output": "Created src/middleware/rateLimit.ts",
            },
            "toolu_demo_rl_write",
        ),
        (
            "post_tool_failure",
            {
                "tool_name": "Bash",
                "tool_input": "npm test -- rateLimit",
                "error": "Error: connect ECONNREFUSED 127.0.0.1:6379 — rate limiter tests need Redis",
            },
            "toolu_demo_rl_fail",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Edit",
                "tool_input": {
                    "file_path": "test/setup.ts",
                    "old_string": "new Redis()",
                    "new_string": "new RedisMock()",
                },
                "tool_output": "Updated test/setup.ts: use ioredis-mock so rate limit tests run without a Redis server",
            },
            "toolu_demo_rl_mock",
        ),
        (
            "post_tool_use",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "npm test -- rateLimit"},
                "tool_output": "PASS test/rateLimit.test.ts — 6th login attempt within a minute gets 429 Too Many Requests",
            },
            "toolu_demo_rl_pass",
        ),
    ],
}

QUERIES = (
    "JWT token expiry and refresh",
    "slow orders endpoint N+1 query",
    "rate limit tests fail redis ECONNREFUSED",
)


def seed(rest: Rest) -> int:
    stored = 0
    for day, (session, events) in enumerate(SESSIONS.items(), start=1):
        base = {"sessionId": session, "project": PROJECT, "cwd": CWD}
        rest.call("POST", "/agentmemory/session/start", base)
        for i, (hook, data, event_id) in enumerate(events):
            body = {
                **base,
                "hookType": hook,
                "timestamp": f"2026-11-{day:02d}T10:{i:02d}:00.000Z",
                "data": data,
                "eventId": event_id,
                "agentId": "claude-code",
            }
            rest.call("POST", "/agentmemory/observe", body)
            stored += 1
        rest.call("POST", "/agentmemory/session/end", {"sessionId": session})
    rest.call(
        "POST",
        "/agentmemory/remember",
        {
            "content": "Auth uses RS256 JWT access tokens that expire after 15 minutes, with "
            "rotating refresh tokens in an httpOnly cookie.",
            "type": "decision",
            "concepts": ["jwt", "auth"],
            "files": ["src/middleware/auth.ts", "src/auth/refresh.ts"],
            "project": PROJECT,
        },
    )
    return stored
