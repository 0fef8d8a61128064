// agentmemory for OpenCode: a plugin that hands OpenCode's events to agentmemory's hook
// script (standard-library Python: it scrubs, sends, and spools while the server is down).
// Written by `agentmemory connect opencode --with-hooks`; the values below are filled in at
// install time. It never holds OpenCode up: each event starts the script and moves on.
import { spawn } from "node:child_process";

const PYTHON = "__AGENTMEMORY_PYTHON__";
const HOOK = "__AGENTMEMORY_HOOK__";
const ENV = __AGENTMEMORY_ENV__;

function send(payload) {
  try {
    const child = spawn(PYTHON, ["-S", HOOK, "--agent=opencode"], {
      stdio: ["pipe", "ignore", "ignore"],
      env: { ...process.env, ...ENV },
      detached: true,
    });
    child.on("error", () => {});
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
    child.unref();
  } catch {
    // no Python where the plugin was written: nothing to record, nothing to break
  }
}

function text(parts) {
  return (parts ?? [])
    .filter((p) => p && p.type === "text" && !p.synthetic)
    .map((p) => p.text ?? "")
    .join("\n")
    .trim();
}

export const AgentMemory = async ({ directory }) => {
  const args = new Map(); // callID -> the tool's arguments, until it is done
  const base = (event, sessionID) => ({
    hook_event_name: event,
    session_id: sessionID,
    cwd: directory,
  });

  return {
    event: async ({ event }) => {
      const p = event.properties ?? {};
      if (event.type === "session.created" && p.info?.id && !p.info.parentID) {
        send({ ...base("SessionStart", p.info.id), source: "startup" });
      } else if (event.type === "session.idle" && p.sessionID) {
        send(base("Stop", p.sessionID));
      } else if (event.type === "session.compacted" && p.sessionID) {
        send({ ...base("PreCompact", p.sessionID), trigger: "auto" });
      } else if (event.type === "session.deleted" && p.info?.id) {
        send({ ...base("SessionEnd", p.info.id), reason: "deleted" });
      } else if (event.type === "message.part.updated") {
        const part = p.part ?? {};
        if (part.type === "tool" && part.state?.status === "error") {
          args.delete(part.callID);
          send({
            ...base("PostToolUseFailure", part.sessionID),
            tool_name: part.tool,
            tool_input: part.state.input ?? {},
            tool_use_id: part.callID,
            error: String(part.state.error ?? "failed"),
          });
        }
      }
    },
    "chat.message": async (input, output) => {
      const prompt = text(output?.parts);
      if (prompt) send({ ...base("UserPromptSubmit", input.sessionID), prompt });
    },
    "tool.execute.before": async (input, output) => {
      args.set(input.callID, output?.args ?? {});
    },
    "tool.execute.after": async (input, output) => {
      const toolInput = args.get(input.callID) ?? {};
      args.delete(input.callID);
      send({
        ...base("PostToolUse", input.sessionID),
        tool_name: input.tool,
        tool_input: toolInput,
        tool_use_id: input.callID,
        tool_response: output?.output ?? "",
      });
    },
  };
};
