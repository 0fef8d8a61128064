"""Signals: messages between agents, read once per reader (receipts)."""
