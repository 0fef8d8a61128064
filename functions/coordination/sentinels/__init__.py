"""Sentinels: watchers (timer, pattern, checkpoint, webhook ...) that fire once and unblock."""
