"""The engine console: a loopback web app to inspect and operate a running engine."""
