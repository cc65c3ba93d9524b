"""Dataset imports from files on this machine (the command, and the task behind an upload): the dataset's
status around the two passes (validation, then storage) and the report they leave.
"""

from __future__ import annotations

from array import array
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.core.services.webhooks.delivery import webhook_emit
from annotator.datasets.batches import Progress
from annotator.datasets.files.images import ImageProblem, open_images
from annotator.datasets.files.readers import MalformedFile, caption_file_for, read_split
from annotator.datasets.models.dataset import DATASET_TRANSITIONS, Caption, Dataset, DatasetStatus, Image
from annotator.datasets.services.storage import cleanup, write_captions, write_images
from annotator.datasets.services.validation import Offenders, check_paths, validate

MAX_LISTED_DUPLICATES = 1_000


def dataset_begin(*, name: str, owner, queued: bool = False) -> tuple[Dataset, str | None]:
    """Create the dataset or move an existing one to `importing`; returns it and its previous status.

    `queued` (an upload the task will import): the report says so, and a dataset already importing is
    refused (409) instead of being imported twice at once.
    """
    report = {"phase": "queued"} if queued else {"phase": "checking"}
    with transaction.atomic():
        dataset, created = Dataset.objects.select_for_update().get_or_create(
            name=name, defaults={"owner": owner, "status": DatasetStatus.IMPORTING, "report": report}
        )
        if created:
            return dataset, None
        if owner is not None and dataset.owner_id is not None and dataset.owner_id != owner.pk:
            raise ApplicationError(f"The dataset {name!r} belongs to another requester.", status=403)
        previous = dataset.status
        if queued and previous == DatasetStatus.IMPORTING:
            raise ApplicationError(
                f"The dataset {name!r} is importing already; wait for it to finish "
                "(or retry it from its page if it stopped).",
                status=409,
            )
        if previous != DatasetStatus.IMPORTING:  # an interrupted import run again from the command resumes
            check_transition(
                transitions=DATASET_TRANSITIONS, current=previous, target=DatasetStatus.IMPORTING, what="dataset"
            )
        dataset.status = DatasetStatus.IMPORTING
        dataset.report = report
        dataset.images_done = dataset.captions_done = 0
        dataset.save(update_fields=["status", "report", "images_done", "captions_done", "updated_at"])
        return dataset, previous


def dataset_finish(*, dataset: Dataset, status: str, report: dict) -> None:
    check_transition(transitions=DATASET_TRANSITIONS, current=DatasetStatus.IMPORTING, target=status, what="dataset")
    Dataset.objects.filter(pk=dataset.pk).update(status=status, report=report, updated_at=timezone.now())
    dataset.refresh_from_db()
    webhook_emit(
        owner=dataset.owner,
        event="import.done",
        data={"dataset": dataset.pk, "name": dataset.name, "status": status},
    )


def dataset_import(
    *,
    name: str,
    captions_path: str | Path,
    images_path: str | Path,
    split_path: str | Path | None = None,
    split: str | None = None,
    owner=None,
    progress: Progress | None = None,
) -> Dataset:
    """Import images and captions into the dataset `name` (created if missing) and return it.

    Captions: COCO caption JSON (`.json`), or plain `.jsonl` / `.csv` (image path, caption). Images: a
    folder or a zip. `split_path` + `split` (e.g. "test" or "train,restval") keep only the images a
    Karpathy split file puts in those splits (their captions are skipped, not errors).

    Two passes, both streaming. The first reads every record and every file and writes nothing; if
    anything is wrong (missing file, corrupt or oversized image, caption for an unknown image, duplicate
    id, malformed JSON, a record that conflicts with an earlier import) it raises ApplicationError whose
    `extra["errors"]` names every offender, and the dataset keeps no rows or files from this run. The
    second pass writes in batches, each batch its own transaction, so progress (`images_done`,
    `captions_done`) is visible to the UI while it runs and the database never holds one huge
    transaction. Because batches commit, a failure mid-write (storage down, a file changed between the
    passes) cannot be rolled back by the database: the rows this run created (their pks are kept) and
    the files no remaining row uses are deleted before the error is raised.

    Idempotent: images and captions whose source ids are already in the dataset are skipped (after
    checking they are the same), so running the same import again writes no row and no file, and an
    interrupted import resumes. Files are stored by content hash; two images with the same bytes keep
    their own rows (captions refer to their ids) but share one stored file, and the report lists them
    under "duplicates". Locking: SELECT ... FOR UPDATE on the Dataset row only while changing its status;
    two imports of the same dataset at the same time are not supported (the unique constraints on
    (dataset, source_id) make the later writer fail instead of duplicating rows).

    A failed import leaves the dataset `failed` with the offenders in `report` (or `ready` again when it
    was ready before, its earlier content intact).

    This runs in the caller's process for as long as the import takes: a web request uses dataset_upload,
    which stores the files and leaves this work to a Celery task.
    """
    name = clean_name(name)
    captions_path, images_path = Path(captions_path), Path(images_path)
    split_path = Path(split_path) if split_path else None

    offenders = Offenders()
    check_paths(captions_path, images_path, split_path, split, offenders)
    if offenders.count:
        raise ApplicationError("The import cannot start: " + "; ".join(offenders.errors), extra=offenders.extra())

    dataset, previous = dataset_begin(name=name, owner=owner)
    return dataset_import_files(
        dataset=dataset,
        previous=previous,
        captions_path=captions_path,
        images_path=images_path,
        split_path=split_path,
        split=split,
        progress=progress,
    )


def clean_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise ApplicationError("A dataset needs a name of 1 to 200 characters.")
    return name


def dataset_import_files(
    *,
    dataset: Dataset,
    previous: str | None,
    captions_path: Path,
    images_path: Path,
    split_path: Path | None,
    split: str | None,
    progress: Progress | None,
    source: dict | None = None,
) -> Dataset:
    """The two passes of dataset_import on a dataset already moved to `importing` (see its docstring)."""
    name = dataset.name
    offenders = Offenders()
    splits = tuple(s.strip() for s in (split or "").split(",") if s.strip())
    source = source or {
        "captions": str(captions_path),
        "images": str(images_path),
        "split_file": str(split_path) if split_path else None,
        "split": list(splits),
    }
    failed_status = DatasetStatus.READY if previous == DatasetStatus.READY else DatasetStatus.FAILED
    images = None
    pool = ThreadPoolExecutor(max_workers=max(1, settings.IMPORT_THREADS), thread_name_prefix="dataset-import")
    try:
        try:
            reader = caption_file_for(captions_path)
            images = open_images(images_path)
            split_filter = read_split(split_path, splits) if split_path else None
            plan = validate(
                dataset=dataset,
                reader=reader,
                images=images,
                split_filter=split_filter,
                offenders=offenders,
                progress=progress,
                pool=pool,
            )
        except MalformedFile as exc:
            offenders.add("file", None, exc.path.name, exc.message)
        except ImageProblem as exc:
            offenders.add("file", None, images_path.name, str(exc))
        except BaseException as exc:
            dataset_finish(
                dataset=dataset,
                status=failed_status,
                report={"phase": "failed", "source": source, "errors": [f"{type(exc).__name__}: {exc}"]},
            )
            raise
        if offenders.count:
            message = f"The import of {name!r} was refused: {offenders.count} problem(s), nothing was imported."
            dataset_finish(
                dataset=dataset,
                status=failed_status,
                report={"phase": "refused", "source": source, **offenders.extra()},
            )
            raise ApplicationError(message, extra=offenders.extra())

        images_total = plan.images_new + plan.images_unchanged
        captions_total = plan.captions_new + plan.captions_unchanged
        Dataset.objects.filter(pk=dataset.pk).update(
            images_total=images_total,
            captions_total=captions_total,
            images_done=0,
            captions_done=0,
            report={"phase": "importing", "source": source},
            updated_at=timezone.now(),
        )
        created_images, created_captions, written = array("q"), array("q"), []
        try:
            write_images(
                dataset=dataset,
                reader=reader,
                images=images,
                split_filter=split_filter,
                created=created_images,
                written=written,
                progress=progress,
                total=images_total,
                pool=pool,
            )
            write_captions(
                dataset=dataset, reader=reader, created=created_captions, progress=progress, total=captions_total
            )
        except BaseException as exc:
            cleanup(created_images=created_images, created_captions=created_captions, written=written)
            known = isinstance(exc, (ImageProblem, MalformedFile))
            detail = str(exc) if known else f"{type(exc).__name__}: {exc}"
            dataset_finish(
                dataset=dataset,
                status=failed_status,
                report={
                    "phase": "failed",
                    "source": source,
                    "errors": [f"import stopped while writing: {detail}"],
                },
            )
            if known:
                raise ApplicationError(
                    f"The import of {name!r} stopped and was undone: {detail}", extra={"errors": [detail]}
                ) from exc
            raise
    finally:
        pool.shutdown(wait=True)
        if images is not None:
            images.close()

    duplicates = [{"content_hash": digest, "image_ids": ids} for digest, ids in plan.duplicates.items()]
    report = {
        "phase": "done",
        "source": source,
        "format": reader.format,
        "images_created": len(created_images),
        "images_unchanged": plan.images_unchanged,
        "captions_created": len(created_captions),
        "captions_unchanged": plan.captions_unchanged,
        "images_skipped_by_split": plan.images_skipped_by_split,
        "captions_skipped_by_split": plan.captions_skipped_by_split,
        "duplicate_groups": len(duplicates),
        "duplicates": duplicates[:MAX_LISTED_DUPLICATES],
        "finished_at": timezone.now().isoformat(),
    }
    Dataset.objects.filter(pk=dataset.pk).update(
        images_total=Image.objects.filter(dataset=dataset).count(),
        images_done=Image.objects.filter(dataset=dataset).count(),
        captions_total=Caption.objects.filter(dataset=dataset).count(),
        captions_done=Caption.objects.filter(dataset=dataset).count(),
    )
    dataset_finish(dataset=dataset, status=DatasetStatus.READY, report=report)
    return dataset
