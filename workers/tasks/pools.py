"""Pool imports (`default` queue) and gallery enlargements (`gpu` queue): thin callers of the services and
workers.ranking.pool (torch is imported inside the task, so the web process never loads it)."""

from annotator.core import task_names
from annotator.finegrained.services.pools.imports import pool_import_run
from workers.tasks.jobs import job_task


@job_task(name=task_names.POOL_IMPORT, hours=6)
def pool_import_task(pool_id: int) -> str:
    """Import the stored upload of ImagePool `pool_id`; returns the pool's status afterwards."""
    return pool_import_run(pool_id=pool_id)


@job_task(name=task_names.ENLARGEMENT, hours=6, soft_margin_seconds=120)
def enlargement_task(enlargement_id: int) -> str:
    """Score the pool of GalleryEnlargement `enlargement_id` against its targets and store the proposal."""
    from workers.ranking.pool import enlargement_execute

    return enlargement_execute(enlargement_id)
