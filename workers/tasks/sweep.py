"""The sweep on the `default` queue, run by celery beat every SWEEP_EVERY_SECONDS (settings)."""

from celery import shared_task

from annotator.core import task_names
from annotator.operations.services.sweep import work_sweep


@shared_task(
    name=task_names.WORK_SWEEP,
    # Idempotent and safe beside itself (annotator/operations/services/sweep.py); a pass lost with its worker is simply
    # the next pass's work, so it is acknowledged on receipt and never redelivered late.
    time_limit=120,
    soft_time_limit=100,
)
def work_sweep_task() -> dict:
    """Score submissions whose scoring message was lost, release expired leases, resume stalled jobs."""
    run = work_sweep()
    return {"scored": run.scored, "expired": run.expired, "requeued": run.requeued, "problems": len(run.problems)}
