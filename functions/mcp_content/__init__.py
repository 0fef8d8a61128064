"""The MCP resources and prompts (upstream's), as operations."""
