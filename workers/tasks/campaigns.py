"""Campaign builds on the `default` queue: a thin caller of annotator.campaigns.services.build."""

from annotator.campaigns.services.build import campaign_build_run
from annotator.core import task_names
from workers.tasks.jobs import job_task


# A build runs inside one transaction under its row lock: a worker that dies mid-build rolls it back, and the
# redelivered task builds from scratch.
@job_task(name=task_names.CAMPAIGN_BUILD, hours=2)
def campaign_build_task(campaign_id: int) -> str:
    """Build Campaign `campaign_id` queued by campaign_build_request; returns its status afterwards."""
    return campaign_build_run(campaign_id=campaign_id)
