"""Staying up while a component blinks: the fail-soft cache, outage responses, the errors that mean one.

Redis (cache, sessions, broker) and PostgreSQL can drop out for seconds: a restart, a failover, a full
memory, connections terminated by an operator. A person's request then gets the database instead of the
cache, or a clear 503 with Retry-After, never a 500; work that could not be queued is picked up by the
sweep (annotator/operations/services/sweep.py). docs/operations.md says what each fault does to whom.
"""
