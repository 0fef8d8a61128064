"""Routines: frozen workflow templates whose runs become actions."""
