"""The agentmemory MCP server (stdio) and the tool registry the REST shim shares."""
