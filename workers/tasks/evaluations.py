"""Model evaluations on the `default` queue: thin callers of annotator.research.services.scorecards."""

from celery import shared_task

from annotator.core import task_names
from annotator.research.services.scorecards import evaluation_run


@shared_task(
    name=task_names.EVALUATION_RUN,
    acks_late=True,  # idempotent: a finished evaluation is left alone, a half-scored one is scored again
    reject_on_worker_lost=True,
    time_limit=3600,
    soft_time_limit=3600 - 60,
    autoretry_for=(ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=3,
)
def evaluation_run_task(evaluation_id: int) -> str:
    """Score evaluation `evaluation_id`; returns its final status."""
    return evaluation_run(evaluation_id=evaluation_id).status
