"""Facets: typed tags on memories, observations, sessions and lessons."""
