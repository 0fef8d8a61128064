"""The MEMORY.md bridge: Claude Code's own memory file and agentmemory's memories, kept in
step both ways. Each memory's block in the file carries its id, so an edit in the file
becomes a new version of that memory and a new block a new memory, and writing the file
back changes nothing that was just read: no loops, no duplicates."""
