"""Where a memory came from: its sources, their sessions, and the commits linked to them."""
