"""The viewer worker (`python -m workers.viewer`): what a person opens to see what their
agents remembered, on the instance's viewer port (3113), loopback only, for its owner only
(a one-time link from `agentmemory viewer` signs a browser in: workers/viewer/auth.py)."""
