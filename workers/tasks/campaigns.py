"""Campaign builds on the `default` queue: a thin caller of annotator.services.campaigns.build."""

from celery import shared_task

from annotator.services.campaigns.build import campaign_build_run


@shared_task(
    name="workers.tasks.campaigns.campaign_build_task",
    # Idempotent: the build runs under the campaign's row lock (SKIP LOCKED) and only while it is `building`,
    # so a redelivered or duplicated task does nothing; one whose worker died mid-build is redelivered and
    # builds from scratch (the dead build's transaction was rolled back).
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=2 * 3600,
    # The soft limit fails the build inside the task, which records it (back to draft, build_error).
    soft_time_limit=2 * 3600 - 60,
    # No autoretry_for: the service records every failure on the campaign, and its requester builds again.
)
def campaign_build_task(campaign_id: int) -> str:
    """Build Campaign `campaign_id` queued by campaign_build_request; returns its status afterwards."""
    return campaign_build_run(campaign_id=campaign_id)
