"""Checkpoints: external conditions (CI, approval, deploy) that gate actions."""
