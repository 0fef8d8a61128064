"""`python -m workers.mcp`: the stdio MCP server (same as `agentmemory mcp`)."""

from workers.mcp.server import main

if __name__ == "__main__":
    main()
