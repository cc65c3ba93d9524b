"""Label exports on the `default` queue: thin callers of annotator.labels.services.exports.jobs."""

from annotator.core import task_names
from annotator.labels.services.exports.jobs import export_run
from workers.tasks.jobs import job_task


# A half-written file is written again from scratch by the redelivered task.
@job_task(name=task_names.EXPORT_RUN, hours=3, transient_retries=3)
def export_run_task(export_id: int) -> str:
    """Write export `export_id` to storage; returns its final status."""
    return export_run(export_id=export_id).status
