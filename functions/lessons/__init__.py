"""Lessons: saved on purpose, recalled by relevance x strength, reinforced when they helped."""
