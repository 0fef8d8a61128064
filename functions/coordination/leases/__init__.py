"""Leases: one holder of an action at a time (a KV key with a JetStream TTL)."""
