"""Dataset imports of uploads on the `default` queue: a thin caller of annotator.services.importing.uploads."""

from celery import shared_task

from annotator.services.importing.uploads import dataset_import_run


@shared_task(
    name="workers.tasks.datasets.dataset_import_task",
    # Idempotent: the import is claimed on the Dataset row, so a redelivered or duplicated task does nothing
    # while another runs it, and a finished one is left alone.
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=6 * 3600,
    soft_time_limit=6 * 3600 - 60,
    # No autoretry_for: the service records every failure on the dataset (`failed`, with its message), and
    # a failed import is queued again by its requester (dataset_import_retry), not behind their back.
)
def dataset_import_task(dataset_id: int) -> str:
    """Import the stored upload of Dataset `dataset_id`; returns the dataset's status afterwards."""
    return dataset_import_run(dataset_id=dataset_id)
