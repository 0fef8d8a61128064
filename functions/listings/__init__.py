"""Read-only listings of stored records: the consolidated tiers, sessions by branch and worktree."""
