"""Relations between memories (related, supersedes, contradicts ...), and the version
chain a supersession makes."""
