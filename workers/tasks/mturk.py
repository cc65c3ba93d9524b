"""Decisions sent to MTurk on the `default` queue.

The service counts and records every attempt and marks a decision failed after its last one; the task
only retries with exponential backoff while the service says another attempt is worth it. Idempotent
(a sent decision is skipped), so acks_late: a worker killed mid-call leaves the message to be redelivered.
"""

from botocore.exceptions import BotoCoreError
from celery import shared_task
from django.db import InterfaceError, OperationalError

from annotator.services.quality.external_decisions import MAX_ATTEMPTS, DecisionNotSent, external_decision_send


@shared_task(
    name="workers.tasks.mturk.external_decision_send_task",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=120,
    soft_time_limit=100,
    autoretry_for=(DecisionNotSent, BotoCoreError, ConnectionError, TimeoutError, OperationalError, InterfaceError),
    # 30 s, 1, 2, 4 min (with jitter): an MTurk hiccup passes, and the gaps stay under the sweep's stale time,
    # so the sweep does not queue a decision that is only waiting for its next try.
    retry_backoff=30,
    retry_backoff_max=240,
    max_retries=MAX_ATTEMPTS - 1,
)
def external_decision_send_task(decision_id: int) -> str | None:
    """Send one approval or rejection to MTurk; retried while it fails in a way worth retrying."""
    decision = external_decision_send(decision_id=decision_id)
    return None if decision is None else decision.status
