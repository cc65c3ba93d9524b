"""Dataset imports of uploads on the `default` queue: a thin caller of annotator.datasets.services.uploads."""

from annotator.core import task_names
from annotator.datasets.services.uploads import dataset_import_run
from workers.tasks.jobs import job_task


@job_task(name=task_names.DATASET_IMPORT, hours=6)
def dataset_import_task(dataset_id: int) -> str:
    """Import the stored upload of Dataset `dataset_id`; returns the dataset's status afterwards."""
    return dataset_import_run(dataset_id=dataset_id)
