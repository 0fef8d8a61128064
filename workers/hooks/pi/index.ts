// agentmemory for pi: forwards pi's lifecycle events to agentmemory's hook script, which
// records them (and spools them while the server is down). Written by
// `agentmemory connect pi`; the two paths below are filled in at install time.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

const PYTHON = "__AGENTMEMORY_PYTHON__";
const HOOK = "__AGENTMEMORY_HOOK__";
const ENV: Record<string, string> = __AGENTMEMORY_ENV__;

function send(payload: Record<string, unknown>): Promise<void> {
  // The hook always exits 0 and bounds its own time; never let it hold pi up.
  return new Promise((resolve) => {
    try {
      const child = spawn(PYTHON, ["-S", HOOK], {
        stdio: ["pipe", "ignore", "ignore"],
        env: { ...process.env, ...ENV },
      });
      child.on("error", () => resolve());
      child.on("close", () => resolve());
      child.stdin.end(JSON.stringify(payload));
    } catch {
      resolve();
    }
  });
}

export default function (pi: ExtensionAPI) {
  let session = randomUUID();

  const base = (event: string, cwd: string) => ({
    hook_event_name: event,
    session_id: session,
    cwd,
  });

  pi.on("session_start", async (event, ctx) => {
    session = ctx.sessionManager.getSessionFile?.() ?? session;
    await send({ ...base("SessionStart", ctx.cwd), source: event.reason ?? "startup" });
  });

  pi.on("before_agent_start", async (event, ctx) => {
    await send({ ...base("UserPromptSubmit", ctx.cwd), prompt: event.prompt ?? "" });
  });

  pi.on("tool_result", async (event, ctx) => {
    const failed = Boolean(event.isError);
    const output = (event.content ?? [])
      .map((c: { type: string; text?: string }) => (c.type === "text" ? c.text ?? "" : ""))
      .join("\n");
    await send({
      ...base(failed ? "PostToolUseFailure" : "PostToolUse", ctx.cwd),
      tool_name: event.toolName,
      tool_use_id: event.toolCallId,
      tool_input: event.input ?? {},
      ...(failed ? { error: output } : { tool_response: output }),
    });
  });

  pi.on("session_before_compact", async (_event, ctx) => {
    await send({ ...base("PreCompact", ctx.cwd), trigger: "auto" });
  });

  pi.on("agent_end", async (_event, ctx) => {
    await send(base("Stop", ctx.cwd));
  });

  pi.on("session_shutdown", async (event, ctx) => {
    await send({ ...base("SessionEnd", ctx.cwd), reason: event.reason ?? "quit" });
  });
}
