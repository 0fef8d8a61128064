"""Workflow steps: what an observation did, reduced to a token that recurs across sessions
(`edit src/auth.py`, `run pytest`, `run git commit`). Reads and searches are left out: they
are exploration, not the workflow."""

from __future__ import annotations

import re

from functions.kernel.records import Observation

# Tools whose second word says what they do (`git commit`, `npm test`, `python -m pytest`).
_TWO_WORD = frozenset(
    (
        "git",
        "npm",
        "pnpm",
        "yarn",
        "npx",
        "cargo",
        "go",
        "uv",
        "pip",
        "pip3",
        "docker",
        "make",
        "kubectl",
        "poetry",
        "gh",
        "bun",
        "dotnet",
        "mvn",
        "gradle",
    )
)
_ENV_ASSIGN = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")


def command_of(obs: Observation) -> str:
    """The command an observation ran, from its title (`Ran: <first line>`)."""
    title = obs.title
    if title.startswith("Ran: "):
        return title[5:].strip()
    return ""


def command_head(command: str) -> str:
    """`cd app && FOO=1 .venv/bin/pytest -q tests/x.py` -> `pytest`; `git commit -m x` ->
    `git commit`; `python -m pytest` -> `python -m pytest`."""
    part = command.split("&&")[-1].split("|")[0].strip()
    words = [w for w in part.split() if not _ENV_ASSIGN.match(w)]
    if not words:
        return ""
    head = words[0].rsplit("/", 1)[-1].lower()
    rest = [w for w in words[1:] if not w.startswith("-")]
    if head in ("python", "python3") and len(words) > 2 and words[1] == "-m":
        return f"{head} -m {words[2].lower()}"
    if head in _TWO_WORD and rest:
        return f"{head} {rest[0].lower()}"
    return head


def step_of(obs: Observation) -> str:
    if obs.type in ("file_edit", "file_write") and obs.files:
        return f"edit {obs.files[0]}"
    if obs.type == "command":
        head = command_head(command_of(obs))
        return f"run {head}" if head else ""
    return ""


def error_key(obs: Observation) -> str:
    """A recurring error, normalised so numbers and paths do not split one error in many."""
    if obs.type != "error":
        return ""
    text = obs.title.split("failed:", 1)[-1].strip() or obs.title
    text = re.sub(r"(?:/[\w.-]+)+", "<path>", text)
    text = re.sub(r"\b\d+\b", "<n>", text)
    return text[:120]
