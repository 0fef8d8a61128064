"""The composition roots: process entry points and the applications (CLI, hooks, MCP,
viewer, console)."""

from pathlib import Path

ENGINE_CONFIG = Path(__file__).resolve().parent / "config" / "engine.yaml"
"""The engine config `agentmemory start` runs by default: config/engine.yaml, shipped as
package data through the workers/config link (the engine finds it installed through the
`engine.config` entry point)."""
