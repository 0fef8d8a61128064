"""The MCP tools: every function declared with `tool=engine.Tool(...)`, as `$SRV.INFO`
publishes it (no tool is written here). A tool's arguments are its function's request
object, so its input schema is the request type's JSON Schema; its result is the function's
reply, as JSON text and as structured content."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import FunctionError, FunctionInfo
from functions.kernel.settings import kernel_settings
from functions.quarantine.frame import OWNER_ARGUMENTS, RECALL_TOOLS, framed_answer

SETS = ("core", "basic", "all")
"""`AGENTMEMORY_TOOLS`: which tools an MCP client is shown, as upstream documents them:
core = its 8 essentials, basic = its 14 base tools, all (default) = every tool. core and
basic overlap without one holding the other, so a tool's `tier` names the sets it is in
(`"core,basic"`); every tool is in all."""


class ToolDef(msgspec.Struct, kw_only=True):
    name: str
    description: str
    input_schema: dict[str, Any]
    function_id: str
    tier: str = "all"

    def descriptor(self) -> dict[str, Any]:
        """The MCP `Tool` object (JSON), as `tools/list` and upstream's shim read it."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }


def input_schema(request: dict[str, Any] | None) -> dict[str, Any]:
    """An object schema for a request type's msgspec schema (its top-level `$ref` resolved,
    the other definitions kept under `$defs` for nested references)."""
    if not request:
        return {"type": "object", "properties": {}}
    defs: dict[str, Any] = dict(request.get("$defs") or {})
    ref = request.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        obj = dict(defs.get(name) or {"type": "object"})
    else:
        obj = {k: v for k, v in request.items() if k != "$defs"}
    obj.pop("title", None)
    obj["properties"] = {
        k: v for k, v in (obj.get("properties") or {}).items() if k not in OWNER_ARGUMENTS
    }
    if defs and msgspec.json.encode(obj).find(b'"#/$defs/') >= 0:
        obj["$defs"] = defs
    return obj


def tool_defs(functions: list[FunctionInfo]) -> list[ToolDef]:
    out = [
        ToolDef(
            name=f.tool.name,
            description=f.tool.description or f.description,
            input_schema=input_schema(f.request_schema),
            function_id=f.id,
            tier=f.tool.tier,
        )
        for f in functions
        if f.tool is not None
    ]
    return sorted(out, key=lambda t: t.name)


def tiers_of(tier: str) -> set[str]:
    return {t.strip().lower() for t in tier.replace(" ", ",").split(",") if t.strip()}


def visible(tools: list[ToolDef], setting: str | None = None) -> list[ToolDef]:
    chosen = (setting or kernel_settings().tools).strip().lower()
    if chosen not in SETS or chosen == "all":
        return tools
    return [t for t in tools if chosen in tiers_of(t.tier)]


def text_result(text: str, *, error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if error:
        out["isError"] = True
    return out


def result_document(reply: Any, tool: str = "") -> dict[str, Any]:
    """An MCP CallToolResult (JSON) for a function's reply. What a model reads of a recall
    tool's answer is framed as retrieved data (functions/quarantine/frame.py): the reply
    under an `about` notice, no record's text able to pass for markup; the structured
    content is the reply as it is."""
    if isinstance(reply, dict) and tool in RECALL_TOOLS:
        text = framed_answer(reply)
    else:
        text = msgspec.json.encode(reply).decode() if not isinstance(reply, str) else reply
    out = text_result(text)
    if isinstance(reply, dict):
        out["structuredContent"] = reply
    return out


def error_text(err: FunctionError) -> str:
    """What a model reads of a refused call: the message, the field, whether to retry."""
    where = f" (field `{err.field}`)" if err.field and err.field not in err.message else ""
    hint = " This may succeed if retried later." if err.retryable else ""
    return f"{err.message}{where}.{hint}"
