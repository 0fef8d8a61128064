"""Crystals: digests of completed action chains, saved as memories."""
