"""Replay: sessions as timelines of discrete events, and transcript imports."""
