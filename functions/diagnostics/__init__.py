"""Diagnostics and heal: find broken state and repair what can be repaired."""
