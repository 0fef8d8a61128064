"""Governance beyond one id: bulk deletion by filter, and migration of old data."""
