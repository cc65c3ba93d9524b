"""Label exports on the `default` queue: thin callers of annotator.services.exports.jobs."""

from celery import shared_task

from annotator.services.exports.jobs import export_run


@shared_task(
    name="workers.tasks.exports.export_run",
    acks_late=True,  # idempotent: a succeeded job is left alone, a half-written one is written again
    reject_on_worker_lost=True,
    time_limit=3 * 3600,
    soft_time_limit=3 * 3600 - 60,
    autoretry_for=(ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=3,
)
def export_run_task(export_id: int) -> str:
    """Write export `export_id` to storage; returns its final status."""
    return export_run(export_id=export_id).status
