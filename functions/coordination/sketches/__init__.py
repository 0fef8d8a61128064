"""Sketches: ephemeral action graphs, promoted or discarded."""
