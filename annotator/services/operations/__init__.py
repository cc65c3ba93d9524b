"""Keeping the work moving when parts of the system fail: the sweep (docs/operations.md)."""
