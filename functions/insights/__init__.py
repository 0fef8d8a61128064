"""What recurred across sessions: patterns, generated rules, reflected insights."""
