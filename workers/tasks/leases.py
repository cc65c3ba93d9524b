"""Lease expiry on the `default` queue, run by celery beat (settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from annotator.core import task_names
from annotator.crowd.services.assignments import assignments_expire


@shared_task(
    name=task_names.ASSIGNMENTS_EXPIRE,
    acks_late=True,  # idempotent: a redelivered run finds nothing left to expire
    time_limit=120,
    soft_time_limit=100,
)
def assignments_expire_task() -> int:
    """Mark reserved leases past their expiry as expired, so their HITs are offered again."""
    return assignments_expire()
