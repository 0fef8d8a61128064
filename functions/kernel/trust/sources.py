"""Who wrote the words of a hook's event: the `Source` an observation is classified as.

The hook type says who speaks (the user's prompt, the host's notice, an assistant's
message), a tool event's tool says what kind of third party (a web page, a file, a command's
output), and an agent instruction file read by the agent (CLAUDE.md, AGENTS.md ...) is
its own kind: it addresses the agent by design.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from functions.kernel.trust.classify import Source

USER = Source(kind="user")
HOST = Source(kind="host")
ASSISTANT = Source(kind="assistant")
REMEMBER = Source(kind="remember")
IMPORT = Source(kind="import")
PEER = Source(kind="peer")
BRIDGE = Source(kind="bridge")
COMMAND = Source(kind="command")

_BY_HOOK: dict[str, Source] = {
    "prompt_submit": USER,
    "pre_compact": USER,  # `/compact <instructions>` is typed by the user
    "notification": HOST,  # the host's own text ("Claude needs your permission ...")
}
_TOOL_HOOKS = frozenset({"post_tool_use", "post_tool_failure"})

INSTRUCTION_FILES = (
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "GEMINI.md",
    ".cursorrules",
    ".windsurfrules",
    ".github/copilot-instructions.md",
)
"""Files whose words are written for the agent (each host reads its own at start)."""
_NAMES = frozenset(posixpath.basename(f).lower() for f in INSTRUCTION_FILES if "/" not in f)
_PATHS = tuple(f.lower() for f in INSTRUCTION_FILES if "/" in f)
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "target_file", "file")
# `cat AGENTS.md`, `head -50 ./CLAUDE.md`: one file shown whole or in part, nothing else run.
_SHOW = re.compile(r"^\s*(?:cat|head|tail|less|more|bat|sed\s+-n\s+\S+)(?:\s+-\S+)*\s+(\S+)\s*$")


def is_instruction_file(path: str) -> bool:
    p = path.replace("\\", "/").lower()
    return posixpath.basename(p) in _NAMES or any(p == s or p.endswith("/" + s) for s in _PATHS)


def _read_path(tool_input: Any) -> str:
    if isinstance(tool_input, dict):
        for key in _PATH_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                return value
        command = tool_input.get("command")
        if isinstance(command, str):
            m = _SHOW.match(command)
            return m.group(1).strip("'\"") if m else ""
    return ""


def source_of_hook(hook_type: str, data: dict[str, Any]) -> Source:
    """The source of an event's `data` as a hook sent it."""
    given = _BY_HOOK.get(hook_type)
    if given is not None:
        return given
    if hook_type in _TOOL_HOOKS:
        tool = data.get("tool_name")
        source = Source.of_tool(tool if isinstance(tool, str) else "")
        if source.kind in ("file", "command") and is_instruction_file(
            _read_path(data.get("tool_input"))
        ):
            return Source(kind="project-instructions", tool=source.tool)
        return source
    # pre_tool_use (the agent's own call), stop and subagent_stop (an assistant's message),
    # task_completed (another agent of the team), session_start/end and subagent_start (no
    # free text): an assistant's words, which a third party may have steered.
    return ASSISTANT
