"""Memory slots: small named, pinned blocks of context (global or per project) that
session-start context always carries."""
