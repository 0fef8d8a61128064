"""The `agentmemory` command line: start, stop, status, doctor, connect, demo, mcp, import…"""
