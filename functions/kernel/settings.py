"""Settings every family shares: who an agent is, what a read may see, how the store is
kept, which embedding provider search and the feature flags see. Each family's own live in
its folder (`functions/<family>/settings.py`); all are read through engine.settings and
listed in docs/CONFIG.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.paths import current_layout
from engine.settings import choice, duration, load, read, text, worker_identity

EMBEDDING_PROVIDERS = ("none", "local", "openai")
TOOL_SETS = ("core", "basic", "all")


@dataclass(frozen=True)
class KernelSettings:
    """Shared by every family of the memory service."""

    agent_id: str = text(
        ("AGENT_ID", "AGENTMEMORY_AGENT_ID"),
        "",
        "The agent a write is attributed to when the request names none (128 characters).",
    )
    agent_scope: str = choice(
        "AGENTMEMORY_AGENT_SCOPE",
        "shared",
        ("shared", "isolated"),
        "isolated: every read sees only the records of the caller's agent.",
    )
    store_compression: str = choice(
        "AGENTMEMORY_STORE_COMPRESSION",
        "all",
        ("all", "events", "none"),
        "What is S2-compressed on disk: all (the log and the records), events (the log), "
        "none; `s2` names all.",
        synonyms={"s2": "all"},
    )
    followup_window: int = duration(
        "AGENTMEMORY_FOLLOWUP_WINDOW_SECONDS",
        30,
        "A search within this long of the last, sharing no result, counts as a follow-up.",
        lo=1,
        clamp=True,
    )
    embedding_provider: str = choice(
        "EMBEDDING_PROVIDER",
        "none",
        EMBEDDING_PROVIDERS,
        "Vector search: none (keyless: BM25 and the graph), local (all-MiniLM-L6-v2) or "
        "openai (an OpenAI-compatible API); `off` names none, `remote` openai.",
        synonyms={"off": "none", "remote": "openai"},
    )
    embedding_url: str = text(
        "EMBEDDING_BASE_URL",
        "https://api.openai.com/v1",
        "EMBEDDING_PROVIDER=openai: the OpenAI-compatible server (OpenAI, Ollama, vLLM).",
    )
    embedding_model: str = text(
        "EMBEDDING_MODEL", "text-embedding-3-small", "EMBEDDING_PROVIDER=openai: the model."
    )
    embedding_key: str = text(
        "EMBEDDING_API_KEY",
        "",
        "EMBEDDING_PROVIDER=openai: the key.",
        shown="OPENAI_API_KEY",
    )
    import_root: str = text(
        "AGENTMEMORY_IMPORT_ROOT",
        "",
        "More folders the file operations (compress-file, replay and graph imports, the "
        "Obsidian export, migrate) may read and write under, besides the data dir and "
        "~/.agentmemory: a list split by `:` (`;` on Windows); relative entries are ignored.",
    )
    tools: str = choice(
        "AGENTMEMORY_TOOLS",
        "all",
        TOOL_SETS,
        "Which MCP tools a client is shown: core (8), basic (14) or all.",
    )


def kernel_settings() -> KernelSettings:
    return load(KernelSettings)


def data_dir() -> Path | None:
    """The instance's data dir as the supervisor gives it to its workers (the layout's
    `<PREFIX>_DATA_DIR`, else ENGINE_DATA_DIR); None for a process run without either."""
    given: Path | None = read(current_layout().setting("DATA_DIR"))
    return given or worker_identity().data_dir
