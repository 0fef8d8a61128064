"""The command line's settings: which server it talks to, and where the agents it connects
keep their configuration."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.settings import load, path, text


@dataclass(frozen=True)
class CliSettings:
    """The `agentmemory` command line and the MCP server it runs."""

    url: str = text(
        "AGENTMEMORY_URL",
        "",
        "The server the CLI, the MCP server and the hooks talk to.",
        shown="this machine's instance (http://127.0.0.1:3111)",
    )
    project_name: str = text(
        "AGENTMEMORY_PROJECT_NAME",
        "",
        "The project transcripts are imported under (as the hooks name it).",
        shown="the working directory's",
    )
    config_home: Path | None = path(
        "XDG_CONFIG_HOME", None, "Where agents keep their configuration.", shown="~/.config"
    )
    copilot_home: Path | None = path(
        "COPILOT_HOME", None, "GitHub Copilot CLI's folder.", shown="~/.copilot"
    )
    cline_dir: Path | None = path("CLINE_DIR", None, "Cline's folder.", shown="~/.cline")
    dsh_home: Path | None = path("DSH_HOME", None, "DeepSeek Harness's folder.", shown="~/.dsh")


def cli_settings() -> CliSettings:
    return load(CliSettings)
