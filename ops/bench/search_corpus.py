"""The search benches' synthetic coding-agent corpus: deterministic observations (tools,
files, errors, prose) in 20 projects, and queries (files, symbols, error codes, prose) each
meant for one project. Shared by ops/bench/search.py and ops/bench/session_start.py."""

from __future__ import annotations

import random

from functions.kernel.records import Observation

MODULES = "auth billing cache cli config db events gateway http jobs mailer metrics orders parser payments queue search sessions storage users".split()
FILES = "handler service models routes utils client schema worker views tests".split()
EXTS = ["py", "ts", "go", "rs"]
ERRORS = [
    "TypeError: cannot read properties of undefined", "KeyError: 'user_id'", "E0425 cannot find value",
    "TS2345 argument of type string", "ENOENT no such file or directory", "ECONNREFUSED 127.0.0.1:5432",
    "AssertionError expected 200 got 500", "TimeoutError after 30s", "IntegrityError duplicate key",
    "panic: runtime error: index out of range",
]  # fmt: skip
VERBS = (
    "fixed refactored added removed renamed optimised documented tested migrated debugged".split()
)
NOUNS = "retry logic, rate limiter, connection pool, token refresh, pagination, webhook signature, cache invalidation, schema migration, feature flag, background job, error handling, input validation, logging, serializer, middleware".split(
    ", "
)
TOOLS = ["Read", "Edit", "Write", "Bash", "Grep", "WebFetch"]


def _ident(rnd: random.Random) -> str:
    a, b = rnd.choice(MODULES), rnd.choice(NOUNS).split()[0]
    return rnd.choice(
        [f"{a}_{b}", f"{a}{b.capitalize()}Handler", f"get_{a}_by_id", f"parse{b.capitalize()}"]
    )


def corpus(n: int, seed: int = 42) -> list[Observation]:
    rnd = random.Random(seed)
    out: list[Observation] = []
    for i in range(n):
        proj = f"proj{i % 20}"
        mod = rnd.choice(MODULES)
        path = f"src/{mod}/{rnd.choice(FILES)}.{rnd.choice(EXTS)}"
        tool = rnd.choice(TOOLS)
        ident = _ident(rnd)
        prose = f"{rnd.choice(VERBS)} the {rnd.choice(NOUNS)} in {mod} for {rnd.choice(NOUNS)}"
        err = rnd.choice(ERRORS) if rnd.random() < 0.2 else ""
        sha = f"{rnd.getrandbits(28):07x}" if rnd.random() < 0.05 else ""
        title = f"{tool} {path}" if tool in ("Read", "Edit", "Write") else f"{tool}: {prose[:60]}"
        raw = (
            f"{prose}. Touched {ident} in {path}. {err} {('commit ' + sha) if sha else ''}".strip()
        )
        out.append(Observation(
            id=f"obs{i:06d}", session_id=f"{proj}-s{i // 20 // 50}", project=proj,
            hook_type="post_tool_failure" if err else "post_tool_use",
            timestamp=f"2026-{1 + (i // 9000) % 12:02d}-{1 + (i // 300) % 28:02d}T00:00:00Z",
            type="error" if err else "file_edit", title=title, narrative=f"{tool} on {path}. {prose}",
            files=[path], concepts=[mod, ident], facts=[f"error: {err}"] if err else [],
            tool_name=tool, raw=raw,
        ))  # fmt: skip
    return out


def queries(n: int, seed: int = 7) -> list[tuple[str, str]]:
    rnd = random.Random(seed)
    out: list[tuple[str, str]] = []
    for i in range(n):
        kind = i % 4
        mod = rnd.choice(MODULES)
        if kind == 0:
            q = f"src/{mod}/{rnd.choice(FILES)}.{rnd.choice(EXTS)}"
        elif kind == 1:
            q = rnd.choice(ERRORS).split(":")[0].split()[0] + f" {mod}"
        elif kind == 2:
            q = _ident(rnd)
        else:
            q = f"{rnd.choice(NOUNS)} {mod} {rnd.choice(VERBS)}"
        out.append((q, f"proj{rnd.randrange(20)}"))
    return out
