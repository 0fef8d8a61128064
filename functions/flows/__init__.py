"""Flows: a completed chain of actions compressed into one workflow memory."""
