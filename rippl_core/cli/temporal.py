"""Belief-time commands (ask, timeline, why, what-if)."""
