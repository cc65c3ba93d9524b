"""Quality-control tasks on the `default` queue: gold scoring, auto-approval, aggregation.

All are idempotent (see the services' docstrings), so they use acks_late: a worker killed mid-task
leaves the message unacknowledged, the broker redelivers it, and the second run finishes the job or
finds it done.
"""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from annotator.core import task_names
from annotator.quality.services.gold_rotation import gold_rotate_for_hit
from annotator.quality.services.peers import assignments_auto_approve_due
from annotator.quality.services.scoring import assignment_score

TASK_OPTIONS = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "time_limit": 300,
    "soft_time_limit": 270,
    # PostgreSQL dropping the connection (a restart, pg_terminate_backend) is retried like a network error.
    "autoretry_for": (ConnectionError, TimeoutError, OperationalError, InterfaceError),
    "retry_backoff": True,
    "max_retries": 5,
}


@shared_task(name=task_names.ASSIGNMENT_SCORE, **TASK_OPTIONS)
def assignment_score_task(assignment_id: int) -> None:
    """Score one submitted assignment and apply its campaign's decision policy; then retire the HIT's gold
    pairs that have been seen too much (annotator.quality.services.gold_rotation), each in its own transaction."""
    assignment = assignment_score(assignment_id=assignment_id)
    if assignment is not None:
        gold_rotate_for_hit(hit_id=assignment.hit_id)


@shared_task(name=task_names.ASSIGNMENTS_AUTO_APPROVE, **TASK_OPTIONS)
def assignments_auto_approve_task() -> int:
    """Beat task: approve unflagged assignments whose auto-approval time has come."""
    return assignments_auto_approve_due()


@shared_task(name=task_names.LABELS_AGGREGATE, **{**TASK_OPTIONS, "time_limit": 3600, "soft_time_limit": 3540})
def labels_aggregate_task(campaign_id: int, method: str | None = None) -> dict:
    """Aggregate a campaign's approved answers into Labels (idempotent upsert)."""
    from annotator.labels.services.aggregation import labels_aggregate
    from annotator.models import Campaign

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return {}
    return labels_aggregate(campaign=campaign, method=method)


@shared_task(
    name=task_names.LABELS_AGGREGATE_STALE,
    **{**TASK_OPTIONS, "time_limit": 3600, "soft_time_limit": 3540},
)
def labels_aggregate_stale_task() -> list[int]:
    """Beat task: re-aggregate live campaigns whose approvals or rejections are newer than their labels."""
    from annotator.labels.services.aggregation import campaigns_aggregate_stale

    return campaigns_aggregate_stale()
