"""Decisions sent to MTurk on the `default` queue.

The service counts and records every attempt and marks a decision failed after its last one; the task
only retries with exponential backoff while the service says another attempt is worth it. Idempotent
(a sent decision is skipped), so acks_late: a worker killed mid-call leaves the message to be redelivered.
"""

from botocore.exceptions import BotoCoreError
from celery import shared_task
from django.db import InterfaceError, OperationalError

from annotator.core import task_names
from annotator.crowd.services.bonuses import MAX_ATTEMPTS as PAYOUT_ATTEMPTS
from annotator.crowd.services.bonuses import PayoutNotSent, bonus_send, worker_message_deliver
from annotator.quality.services.external_decisions import (
    MAX_ATTEMPTS,
    DecisionNotSent,
    external_decision_send,
)

# Worth another try: MTurk or the network hiccupped, or the database connection blinked.
_TRANSIENT = (BotoCoreError, ConnectionError, TimeoutError, OperationalError, InterfaceError)


def _send_options(name: str, *, not_sent: type[Exception], attempts: int) -> dict:
    """One MTurk call per task, idempotent, so acks_late; 30 s, 1, 2, 4 min between tries (with jitter): an
    MTurk hiccup passes, and the gaps stay under the sweep's stale time, so the sweep does not queue a row
    that is only waiting for its next try."""
    return {
        "name": name,
        "acks_late": True,
        "reject_on_worker_lost": True,
        "time_limit": 120,
        "soft_time_limit": 100,
        "autoretry_for": (not_sent, *_TRANSIENT),
        "retry_backoff": 30,
        "retry_backoff_max": 240,
        "max_retries": attempts - 1,
    }


@shared_task(**_send_options(task_names.EXTERNAL_DECISION_SEND, not_sent=DecisionNotSent, attempts=MAX_ATTEMPTS))
def external_decision_send_task(decision_id: int) -> str | None:
    """Send one approval or rejection to MTurk; retried while it fails in a way worth retrying."""
    decision = external_decision_send(decision_id=decision_id)
    return None if decision is None else decision.status


@shared_task(**_send_options(task_names.BONUS_SEND, not_sent=PayoutNotSent, attempts=PAYOUT_ATTEMPTS))
def bonus_send_task(bonus_id: int) -> str | None:
    """Pay one bonus on MTurk (SendBonus, once: its UniqueRequestToken is the bonus); retried while worth it."""
    bonus = bonus_send(bonus_id=bonus_id)
    return None if bonus is None else bonus.status


@shared_task(**_send_options(task_names.WORKER_MESSAGE_SEND, not_sent=PayoutNotSent, attempts=PAYOUT_ATTEMPTS))
def worker_message_send_task(message_id: int) -> str | None:
    """Deliver one message to an MTurk worker (NotifyWorkers); retried while worth it."""
    message = worker_message_deliver(message_id=message_id)
    return None if message is None else message.status
