"""Accounts: crowd workers and API tokens."""
