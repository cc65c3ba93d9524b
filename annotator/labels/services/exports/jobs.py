"""Export jobs: recorded by a request, written to storage by a Celery task.

The file goes to a temporary file first and then to the default storage (local disk or S3), which uploads
from the file without reading it into memory.
"""

from __future__ import annotations

import logging
import os
import tempfile

from django.core.files import File
from django.db import transaction
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign, Scale
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_move, job_requeue, job_stalled
from annotator.core.queue import enqueue_long_on_commit
from annotator.core.services.webhooks.delivery import webhook_emit
from annotator.labels.models.exports import ExportFormat, ExportJob, ExportStatus, ExportVariant
from annotator.labels.selectors.labels import label_method_resolve
from annotator.labels.services.exports.write import labels_write

logger = logging.getLogger(__name__)

FILE_SUFFIX = {
    ExportFormat.ECCV_JSON: "json",
    ExportFormat.ECCV_SPLIT: "zip",
    ExportFormat.JSONL: "jsonl",
    ExportFormat.CXC_CSV: "csv",
    ExportFormat.CSV: "csv",
}


def _check_options(*, campaign: Campaign, format: str, variant: str) -> None:
    if format not in ExportFormat.values:
        raise ApplicationError(f"Unknown export format {format!r}.", extra={"allowed": list(ExportFormat.values)})
    if variant not in ExportVariant.values:
        raise ApplicationError(f"Unknown variant {variant!r}.", extra={"allowed": list(ExportVariant.values)})
    if format == ExportFormat.CXC_CSV and campaign.scale != Scale.SIMILARITY:
        raise ApplicationError("The Crisscrossed CSV is for similarity (0-5) campaigns; this one uses four choices.")


def export_create(
    *,
    campaign: Campaign,
    user,
    format: str,
    variant: str = ExportVariant.LENIENT,
    method: str | None = None,
    merge_original: bool = False,
) -> ExportJob:
    """Record an export job and enqueue its task after commit. The caller checked that `user` may read the campaign.

    Not idempotent by design: each call is a new file (labels change as answers are approved).
    """
    _check_options(campaign=campaign, format=format, variant=variant)
    method = label_method_resolve(campaign=campaign, method=method)
    with transaction.atomic():
        job = ExportJob(
            campaign=campaign,
            created_by=user,
            format=format,
            variant=variant,
            method=method,
            merge_original=merge_original,
        )
        job.full_clean()
        job.save()
        enqueue_long_on_commit(task_names.EXPORT_RUN, job.pk)
    return job


def export_run(*, export_id: int) -> ExportJob:
    """Write the export's file to storage. Idempotent: a succeeded job is returned untouched.

    Takes SELECT ... FOR UPDATE on the ExportJob row only to move its status; the (long) write happens
    outside that lock. A running job that is not stalled (annotator.core.jobs.job_stalled) is left to the task
    writing it (a duplicate the sweep queued does nothing); a stalled one lost its worker, and a redelivered
    or re-queued task starts the file again from scratch.
    """
    with transaction.atomic():
        job = ExportJob.objects.select_for_update().get(pk=export_id)
        if job.status in (ExportStatus.SUCCEEDED, ExportStatus.FAILED):
            return job  # done, or failed for a reason a new export has to address
        if job.status == ExportStatus.RUNNING and not job_stalled(job):
            return job  # another task is writing it
        job_move(job, ExportStatus.RUNNING, started_at=timezone.now(), error="")
    try:
        with tempfile.TemporaryFile() as spool:
            rows = labels_write(
                out=spool,
                campaign_id=job.campaign_id,
                format=job.format,
                method=job.method,
                variant=job.variant,
                merge_original=job.merge_original,
            )
            size = spool.tell()
            spool.seek(0)
            suffix = FILE_SUFFIX[job.format]
            name = f"exports/campaign-{job.campaign_id}/export-{job.pk}-{job.format}-{job.variant}.{suffix}"
            job.file.save(name, File(spool), save=False)
    except Exception as error:  # recorded on the job for the person, logged for the operator
        logger.exception("Export %s failed", job.pk)
        job_move(job, ExportStatus.FAILED, error=f"The export failed: {error}"[:2000], finished_at=timezone.now())
        return job
    job_move(job, ExportStatus.SUCCEEDED, rows=rows, size_bytes=size, file=job.file, finished_at=timezone.now())
    webhook_emit(
        owner=Campaign.objects.get(pk=job.campaign_id).owner,
        event="export.ready",
        data={"export": job.pk, "campaign": job.campaign_id, "format": job.format, "rows": rows},
    )
    return job


def export_retry(*, job: ExportJob) -> ExportJob:
    """Queue a failed or stalled export again; its task writes the file from scratch.

    Locks the ExportJob row. Idempotent: a queued or running export that is not stalled is returned as it
    is, nothing enqueued. A succeeded export is a 409 (its file is there; a new one is a new export).
    """
    with transaction.atomic():
        locked = ExportJob.objects.select_for_update().get(pk=job.pk)
        if locked.status == ExportStatus.SUCCEEDED:
            raise ApplicationError("This export is done; start a new one for fresh labels.", status=409)
        job_requeue(locked, queued=ExportStatus.QUEUED, task=task_names.EXPORT_RUN)
    locked.refresh_from_db()  # with eager Celery it has already run at commit
    return locked


def export_file_name(job: ExportJob) -> str:
    """The name a download is saved under."""
    return os.path.basename(job.file.name) if job.file else f"export-{job.pk}.{FILE_SUFFIX[job.format]}"
