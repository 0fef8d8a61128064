"""The suite's fixtures and helpers live in tests/fixtures.py, loaded here as a plugin."""

pytest_plugins = ["tests.fixtures"]
