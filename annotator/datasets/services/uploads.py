"""Uploads: stored by the request, imported by a Celery task (the dataset page and the API).

The task protocol: the upload is kept with a manifest under `uploads/datasets/<id>/`, the task claims the
import under the Dataset row lock, writes a heartbeat while it checks, and a stalled import can be queued again.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import zipfile
from pathlib import Path

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_stalled
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_long_on_commit
from annotator.datasets.batches import Progress
from annotator.datasets.files.screening import (
    screen_caption_records,
    screen_captions,
    screen_images_zip,
)
from annotator.datasets.models.dataset import DATASET_TRANSITIONS, Dataset, DatasetStatus
from annotator.datasets.services.imports import (
    clean_name,
    dataset_begin,
    dataset_finish,
    dataset_import_files,
)

logger = logging.getLogger(__name__)

UPLOAD_FOLDER = "uploads/datasets"  # in default_storage, shared by the web and the workers: <dataset id>/...
CAPTION_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv")


def _upload_folder(dataset_id: int) -> str:
    return f"{UPLOAD_FOLDER}/{dataset_id}"


def _manifest_name(dataset_id: int) -> str:
    return f"{_upload_folder(dataset_id)}/upload.json"


def _upload_suffix(upload, what: str, suffixes: tuple[str, ...]) -> str:
    """The upload's (allowed) suffix; the person's file name is never used as a path."""
    if upload is None:
        raise ApplicationError(f"The {what} file is missing.")
    name = (upload.name or "").lower()
    suffix = next((s for s in sorted(suffixes, key=len, reverse=True) if name.endswith(s)), None)
    if suffix is None:
        raise ApplicationError(f"The {what} file must end with one of: {', '.join(suffixes)}.")
    if not upload.size:
        raise ApplicationError(f"The {what} file is empty.")
    return suffix


def _upload_delete(dataset_id: int) -> None:
    """Delete the stored upload of `dataset_id` (its files and manifest); missing files are fine."""
    folder = _upload_folder(dataset_id)
    try:
        _dirs, files = default_storage.listdir(folder)
    except FileNotFoundError:
        return
    for file in files:
        default_storage.delete(f"{folder}/{file}")


def _upload_store(*, dataset: Dataset, previous: str | None, files: dict, split: str) -> None:
    """Replace the stored upload of `dataset` with `files` ({"captions": (upload, suffix), ...}) and a
    manifest naming them; the manifest is written last, so a half-stored upload has none."""
    _upload_delete(dataset.pk)
    folder = _upload_folder(dataset.pk)
    manifest = {"previous_status": previous, "split": split, "split_file": None}
    for stem, (upload, suffix) in files.items():
        manifest[stem] = default_storage.save(f"{folder}/{stem}{suffix}", upload)
    default_storage.save(_manifest_name(dataset.pk), ContentFile(json.dumps(manifest).encode()))


def _local_path(name: str, folder: Path) -> Path:
    """A path on this machine for the stored file `name`: the file itself on local storage, else a copy."""
    try:
        return Path(default_storage.path(name))
    except NotImplementedError:  # remote storage (S3): the import's two passes read a local copy
        target = folder / Path(name).name
        with default_storage.open(name, "rb") as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out, 1024 * 1024)
        return target


def _fail_if_importing(*, dataset_id: int, message: str) -> None:
    """Mark a dataset still `importing` as failed with `message` (retryable: its upload is kept)."""
    Dataset.objects.filter(pk=dataset_id, status=DatasetStatus.IMPORTING).update(
        status=DatasetStatus.FAILED, report={"phase": "failed", "errors": [message]}, updated_at=timezone.now()
    )


def dataset_upload(*, name: str, captions, images, split_file=None, split: str | None = None, owner) -> Dataset:
    """Store uploaded files and queue their import into the dataset `name` (created if missing) on Celery.

    What is cheap is checked here, before anything is stored, and refused with an ApplicationError (400):
    the name, a missing or empty file, the suffixes, images that are not a zip archive, a hostile zip or
    caption file (annotator.datasets.files.screening: bombs, `../` and links, not UTF-8, malformed JSON; 400 or
    413), a file named as an image that is not one (an HTML page or an SVG named `.jpg`), the first images
    decoded in full, the caption file's first records read by the import's reader (a COCO instances file is
    refused, naming the file and record), a split name without a split file or the reverse; another
    requester's dataset is a 403 and one already importing a 409. Then the dataset is `importing` (report
    phase "queued"), the files are kept in default_storage under
    `uploads/datasets/<id>/` with a manifest, and `workers.tasks.datasets.dataset_import_task` is enqueued
    after commit; it runs dataset_import's two passes (every image checked with Pillow) and leaves the
    dataset `ready`, or `failed` with every offender in its report. Returns the dataset as it is then
    (already finished when Celery runs eagerly outside a request; a request's import goes on in the
    background, annotator.core.queue.enqueue_long_on_commit).

    Locking: SELECT ... FOR UPDATE on the Dataset row while moving it to `importing`, so two uploads of the
    same name at once queue one import and refuse the other.
    """
    name = clean_name(name)
    files = {
        "captions": (captions, _upload_suffix(captions, "captions", CAPTION_SUFFIXES)),
        "images": (images, _upload_suffix(images, "images", (".zip",))),
    }
    if not zipfile.is_zipfile(images):
        raise ApplicationError("The images file is not a zip archive.")
    screen_images_zip(images)
    screen_captions(captions, files["captions"][1])
    screen_caption_records(captions=captions, suffix=files["captions"][1], images=images)
    if split_file is not None:
        files["split_file"] = (split_file, _upload_suffix(split_file, "split", (".json",)))
    split = (split or "").strip()
    if (split_file is None) != (not split):
        raise ApplicationError("Give both a split file and the split name(s), or neither.")

    dataset, previous = dataset_begin(name=name, owner=owner, queued=True)
    try:
        _upload_store(dataset=dataset, previous=previous, files=files, split=split)
    except BaseException as exc:
        # The files are not all there: no task would find them. Say so instead of staying `importing`.
        failed_status = DatasetStatus.READY if previous == DatasetStatus.READY else DatasetStatus.FAILED
        dataset_finish(
            dataset=dataset,
            status=failed_status,
            report={"phase": "refused", "errors": [f"the upload could not be stored: {type(exc).__name__}: {exc}"]},
        )
        raise
    _import_enqueue(dataset_id=dataset.pk)
    dataset.refresh_from_db()
    return dataset


def _import_enqueue(*, dataset_id: int) -> None:
    try:
        enqueue_long_on_commit(task_names.DATASET_IMPORT, dataset_id)
    except Exception as exc:  # outside a transaction the task is sent at once: a broker that is down
        logger.exception("could not queue the import of dataset %s", dataset_id)
        _fail_if_importing(dataset_id=dataset_id, message=f"the import could not be queued: {exc}")
        raise ApplicationError("The import could not be queued; try again in a minute.", status=503) from exc


def dataset_import_retry(*, dataset: Dataset) -> Dataset:
    """Queue the stored upload of `dataset` again, after a failed import (not a refused one: those need new
    files) or an import that stalled (annotator.core.jobs.job_stalled: its worker died or its task was lost).

    Locks the Dataset row. Idempotent: an import that is queued or running (not stalled) is returned
    unchanged, nothing is enqueued. The task resumes: rows a stopped run committed are kept and skipped.
    An import whose upload is gone, or a dataset in any other state, is a 409.
    """
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        if locked.status == DatasetStatus.IMPORTING and not job_stalled(locked):
            return locked
        failed = locked.status == DatasetStatus.FAILED and (locked.report or {}).get("phase") == "failed"
        if not (failed or locked.status == DatasetStatus.IMPORTING):
            raise ApplicationError(
                "Only an import that failed or stopped making progress can be retried; "
                "a refused one needs corrected files, uploaded again.",
                status=409,
            )
        if not default_storage.exists(_manifest_name(locked.pk)):
            raise ApplicationError("The uploaded files of this import are gone; upload them again.", status=409)
        if locked.status != DatasetStatus.IMPORTING:
            check_transition(
                transitions=DATASET_TRANSITIONS, current=locked.status, target=DatasetStatus.IMPORTING, what="dataset"
            )
        locked.status = DatasetStatus.IMPORTING
        locked.report = {"phase": "queued"}
        locked.save(update_fields=["status", "report", "updated_at"])
    _import_enqueue(dataset_id=locked.pk)  # after the block: a broker that is down fails the import here
    locked.refresh_from_db()
    return locked


def _dataset_claim(*, dataset_id: int) -> Dataset | None:
    """Take the queued (or stalled) import of `dataset_id` for this worker, or None when there is nothing
    to do: the dataset is gone, not importing (done, failed: a late or duplicated delivery), or another
    worker is running its import (progress within annotator.core.jobs.IMPORT_STALE_AFTER). Locks the Dataset row."""
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().filter(pk=dataset_id).first()
        if dataset is None or dataset.status != DatasetStatus.IMPORTING:
            return None
        if (dataset.report or {}).get("phase") != "queued" and not job_stalled(dataset):
            return None
        dataset.report = {"phase": "checking"}
        dataset.images_done = dataset.captions_done = 0
        dataset.save(update_fields=["report", "images_done", "captions_done", "updated_at"])
        return dataset


def _heartbeat(dataset_id: int) -> Progress:
    """Progress of the checking pass into the report (the write pass counts images_done itself); each
    write also moves updated_at, which is what annotator.core.jobs.job_stalled watches."""

    def progress(phase: str, done: int, total: int) -> None:
        if phase.startswith("checking"):
            Dataset.objects.filter(pk=dataset_id, status=DatasetStatus.IMPORTING).update(
                report={"phase": phase, "checked": done}, updated_at=timezone.now()
            )

    return progress


def dataset_import_run(*, dataset_id: int) -> str:
    """Import the stored upload of Dataset `dataset_id`; the body of the Celery task. Returns its status.

    Safe to deliver twice or late: the import is claimed under SELECT ... FOR UPDATE on the Dataset row
    (_dataset_claim), so a duplicate finds it running or finished and does nothing; and dataset_import
    skips images and captions already there, so a claim of a stalled import resumes it without a second
    row. Never raises for a failure of the import itself: the dataset ends `ready`, or `failed` with its
    offenders (a refused upload is then deleted; a failed one is kept for dataset_import_retry).
    """
    dataset = _dataset_claim(dataset_id=dataset_id)
    if dataset is None:
        return Dataset.objects.filter(pk=dataset_id).values_list("status", flat=True).first() or "missing"
    try:
        with default_storage.open(_manifest_name(dataset_id), "rb") as handle:
            manifest = json.load(handle)
        with tempfile.TemporaryDirectory(prefix="vericap-import-") as folder:
            paths = {
                stem: _local_path(manifest[stem], Path(folder)) if manifest[stem] else None
                for stem in ("captions", "images", "split_file")
            }
            source = {"upload": _upload_folder(dataset_id), "split": manifest["split"]}
            dataset_import_files(
                dataset=dataset,
                previous=manifest["previous_status"],
                captions_path=paths["captions"],
                images_path=paths["images"],
                split_path=paths["split_file"],
                split=manifest["split"] or None,
                progress=_heartbeat(dataset_id),
                source=source,
            )
    except ApplicationError:
        _upload_delete(dataset_id)  # refused: the dataset's report names every offender; these files never will
    except Exception as exc:
        logger.exception("the import of dataset %s failed", dataset_id)
        # dataset_import records its own failures; this covers the ones before it started (storage, manifest).
        _fail_if_importing(dataset_id=dataset_id, message=f"{type(exc).__name__}: {exc}")
    else:
        _upload_delete(dataset_id)
    return Dataset.objects.values_list("status", flat=True).get(pk=dataset_id)
