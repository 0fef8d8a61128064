"""Actions: work items with typed edges, what blocks them, the frontier and the next pick."""
