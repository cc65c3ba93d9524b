"""Dataset writes: importing images and captions, from files on disk (the command) or from an upload that a
Celery task imports (the dataset page and the API)."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import zipfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import islice
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import reset_queries, transaction
from django.db.models import F
from django.utils import timezone

from annotator.errors import ApplicationError
from annotator.importing.images import (
    EXTENSIONS,
    ImageProblem,
    check_image,
    make_thumbnail,
    open_images,
    read_checked_bytes,
    sha256,
)
from annotator.importing.readers import (
    CaptionRecord,
    ImageRecord,
    MalformedFile,
    Problem,
    SplitFilter,
    caption_file_for,
    read_split,
)
from annotator.models import DATASET_TRANSITIONS, Caption, Dataset, DatasetStatus, Image
from annotator.models.state import check_transition
from annotator.queue import enqueue_on_commit

logger = logging.getLogger(__name__)

IMAGE_BATCH = 500
PARALLEL_FILES = 32
CAPTION_BATCH = 2000
MAX_LISTED_ERRORS = 10_000  # past this the report says how many more; such a file is in the wrong format
MAX_LISTED_DUPLICATES = 1_000

Progress = Callable[[str, int, int], None]  # (phase, done, total; total 0 while still unknown)

DATASET_IMPORT_TASK = "workers.tasks.datasets.dataset_import_task"
UPLOAD_FOLDER = "uploads/datasets"  # in default_storage, shared by the web and the workers: <dataset id>/...
CAPTION_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv")
# An import writes progress (a heartbeat) at least every batch of 500 images or 2,000 captions; one that has
# written nothing for this long has lost its worker, and its requester may queue it again.
IMPORT_STALE_AFTER = timedelta(minutes=10)


def _batches(iterable: Iterable, size: int) -> Iterator[list]:
    iterator = iter(iterable)
    while batch := list(islice(iterator, size)):
        yield batch


class _Offenders:
    """Every problem found, as readable lines (`errors`) and as structured rows (`offenders`)."""

    def __init__(self):
        self.errors: list[str] = []
        self.offenders: list[dict] = []
        self.count = 0

    def add(self, kind: str, source_id: str | None, where: str, message: str) -> None:
        self.count += 1
        if self.count <= MAX_LISTED_ERRORS:
            problem = Problem(kind, source_id, where, message)
            self.errors.append(str(problem))
            self.offenders.append({"kind": kind, "id": source_id, "where": where, "problem": message})

    def add_problem(self, problem: Problem) -> None:
        self.add(problem.kind, problem.source_id, problem.where, problem.message)

    def extra(self) -> dict:
        errors = list(self.errors)
        if self.count > MAX_LISTED_ERRORS:
            errors.append(f"... and {self.count - MAX_LISTED_ERRORS:,} more problems")
        return {"errors": errors, "offenders": self.offenders, "error_count": self.count}


@dataclass
class _Plan:
    """What the validation pass found: what the write pass will do."""

    images_new: int = 0
    images_unchanged: int = 0
    images_skipped_by_split: int = 0
    captions_new: int = 0
    captions_unchanged: int = 0
    captions_skipped_by_split: int = 0
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # content hash -> image source ids


def _check_paths(
    captions_path: Path, images_path: Path, split_path: Path | None, split: str | None, offenders: _Offenders
) -> None:
    if not captions_path.is_file():
        offenders.add("file", None, str(captions_path), "captions file not found")
    if not images_path.exists():
        offenders.add("file", None, str(images_path), "images folder or zip not found")
    if split_path is not None and not split_path.is_file():
        offenders.add("file", None, str(split_path), "split file not found")
    if (split_path is None) != (not split):
        offenders.add("file", None, "split", "give both a split file and the split name(s), or neither")


def _validate(
    *,
    dataset: Dataset,
    reader,
    images,
    split_filter: SplitFilter | None,
    offenders: _Offenders,
    progress: Progress | None,
    pool: ThreadPoolExecutor,
) -> _Plan:
    """First streaming pass: read every record and every image file, write nothing.

    Keeps only ids (and the first image id per content hash) in memory, so memory grows with the number
    of ids, not with the files: MS-COCO's 617K caption ids take tens of MB.
    """
    plan = _Plan()
    included: set[str] = set()
    excluded: set[str] = set()
    first_by_hash: dict[bytes, str] = {}
    checked = 0

    def inspect(record: ImageRecord, known_digest: str | None) -> tuple[str | None, str | None]:
        """(digest, problem) for one file; runs in a pool thread, so it touches no database."""
        key = images.locate(record.file_name)
        if key is None:
            return None, f"file {record.file_name!r} not found in {images.label}"
        try:
            data = read_checked_bytes(images, key)
            digest = sha256(data)
            if known_digest is not None:  # imported before: only the bytes need to be the same
                if known_digest != digest:
                    return None, "was imported before with a different file (import it under a new dataset name)"
                return digest, None
            check_image(data)
        except ImageProblem as problem:
            return None, f"file {record.file_name!r} {problem}"
        return digest, None

    def check_batch(batch: list[ImageRecord]) -> None:
        nonlocal checked
        existing = dict(
            Image.objects.filter(dataset=dataset, source_id__in=[r.source_id for r in batch]).values_list(
                "source_id", "content_hash"
            )
        )
        results = _parallel(pool, inspect, [(r, existing.get(r.source_id)) for r in batch])
        hashes: dict[str, str] = {}
        for record, (digest, problem) in zip(batch, results, strict=False):
            if problem is not None:
                offenders.add("image", record.source_id, record.where, problem)
            elif record.source_id in existing:
                plan.images_unchanged += 1
            else:
                plan.images_new += 1
                hashes[record.source_id] = digest
        known = dict(
            Image.objects.filter(dataset=dataset, content_hash__in=set(hashes.values())).values_list(
                "content_hash", "source_id"
            )
        )
        for source_id, digest in hashes.items():
            raw = bytes.fromhex(digest)
            first = first_by_hash.setdefault(raw, known.get(digest, source_id))
            if first != source_id:
                plan.duplicates.setdefault(digest, [first]).append(source_id)
        checked += len(batch)
        reset_queries()
        if progress:
            progress("checking images", checked, 0)

    batch: list[ImageRecord] = []
    for record in reader.iter_images():
        if isinstance(record, Problem):
            offenders.add_problem(record)
            continue
        if record.source_id in included or record.source_id in excluded:
            offenders.add("image", record.source_id, record.where, "image id appears more than once")
            continue
        if split_filter is not None and not split_filter.keeps(record):
            excluded.add(record.source_id)
            plan.images_skipped_by_split += 1
            continue
        included.add(record.source_id)
        batch.append(record)
        if len(batch) >= IMAGE_BATCH:
            check_batch(batch)
            batch = []
    if batch:
        check_batch(batch)
    if not included:
        offenders.add(
            "file",
            None,
            reader.path.name,
            "lists no images to import" + (f" in split {', '.join(split_filter.splits)}" if split_filter else ""),
        )

    seen_captions: set[str] = set()
    done = 0

    def check_captions(batch: list[CaptionRecord]) -> None:
        existing = {
            source_id: (image_id, text)
            for source_id, image_id, text in Caption.objects.filter(
                dataset=dataset, source_id__in=[r.source_id for r in batch]
            ).values_list("source_id", "image__source_id", "text")
        }
        for record in batch:
            if record.source_id in existing:
                if existing[record.source_id] != (record.image_source_id, record.text):
                    offenders.add(
                        "caption", record.source_id, record.where, "was imported before with a different text or image"
                    )
                else:
                    plan.captions_unchanged += 1
            else:
                plan.captions_new += 1
        reset_queries()

    batch = []
    for record in reader.iter_captions():
        if isinstance(record, Problem):
            offenders.add_problem(record)
            continue
        if record.source_id in seen_captions:
            offenders.add("caption", record.source_id, record.where, "caption id appears more than once")
            continue
        seen_captions.add(record.source_id)
        if record.image_source_id in excluded:
            plan.captions_skipped_by_split += 1
            continue
        if record.image_source_id not in included:
            offenders.add(
                "caption", record.source_id, record.where, f"refers to unknown image {record.image_source_id}"
            )
            continue
        batch.append(record)
        if len(batch) >= CAPTION_BATCH:
            check_captions(batch)
            done += len(batch)
            batch = []
            if progress:
                progress("checking captions", done, 0)
    if batch:
        check_captions(batch)
    return plan


def _parallel(pool: ThreadPoolExecutor, function, argument_tuples: list[tuple]) -> list:
    """`function(*args)` for each tuple on the pool, results in order. Waits for every call before
    raising the first error, so no file is still being written while a failed import cleans up."""
    futures = [pool.submit(function, *args) for args in argument_tuples]
    wait(futures)
    return [future.result() for future in futures]


def _store(name: str, data: bytes, written: list[str]) -> str:
    stored = default_storage.save(name, ContentFile(data))
    written.append(stored)
    return stored


def _write_images(
    *,
    dataset: Dataset,
    reader,
    images,
    split_filter: SplitFilter | None,
    created: array,
    written: list[str],
    progress: Progress | None,
    total: int,
    pool: ThreadPoolExecutor,
) -> int:
    done = 0
    records = (
        r
        for r in reader.iter_images()
        if isinstance(r, ImageRecord) and (split_filter is None or split_filter.keeps(r))
    )

    def prepare(record: ImageRecord):
        """Read, hash and thumbnail one file (in a pool thread: no database here)."""
        key = images.locate(record.file_name)
        if key is None:
            raise ImageProblem(f"image {record.source_id}: file {record.file_name!r} disappeared during the import")
        data = read_checked_bytes(images, key)
        checked, thumb = make_thumbnail(data)
        return data, sha256(data), checked, thumb

    def store(item) -> tuple[str, str]:
        data, digest, checked, thumb = item
        base = f"{dataset.pk}/{digest[:2]}/{digest}"
        return (
            _store(f"images/{base}{EXTENSIONS.get(checked.format, '.img')}", data, written),
            _store(f"thumbnails/{base}.jpg", thumb, written),
        )

    for batch in _batches(records, IMAGE_BATCH):
        existing = set(
            Image.objects.filter(dataset=dataset, source_id__in=[r.source_id for r in batch]).values_list(
                "source_id", flat=True
            )
        )
        fresh = [r for r in batch if r.source_id not in existing]
        rows: list[Image] = []
        stored: dict[str, tuple[str, str]] = {}  # content hash -> (file, thumbnail) for this batch
        # Files are handled PARALLEL_FILES at a time: their bytes are the only thing held in memory.
        for chunk in _batches(fresh, PARALLEL_FILES):
            prepared = _parallel(pool, prepare, [(record,) for record in chunk])
            digests = {item[1] for item in prepared} - set(stored)
            stored.update(
                (content_hash, (file, thumbnail))
                for content_hash, file, thumbnail in Image.objects.filter(
                    dataset=dataset, content_hash__in=digests
                ).values_list("content_hash", "file", "thumbnail")
            )
            new = {item[1]: item for item in prepared if item[1] not in stored}  # a duplicate shares one copy
            written = _parallel(pool, store, [(item,) for item in new.values()])
            for content_hash, names in zip(new, written, strict=True):
                stored[content_hash] = names
            for record, (_data, digest, checked, _thumb) in zip(chunk, prepared, strict=False):
                file, thumbnail = stored[digest]
                rows.append(
                    Image(
                        dataset=dataset,
                        source_id=record.source_id,
                        file_name=record.file_name[:500],
                        file=file,
                        thumbnail=thumbnail,
                        content_hash=digest,
                        width=checked.width,
                        height=checked.height,
                    )
                )
        with transaction.atomic():
            for row in Image.objects.bulk_create(rows):
                created.append(row.pk)
            Dataset.objects.filter(pk=dataset.pk).update(
                images_done=F("images_done") + len(batch), updated_at=timezone.now()
            )
        written.clear()  # these files now belong to committed rows
        reset_queries()  # with DEBUG on, Django keeps every query's SQL: thousands of bulk INSERTs add up
        done += len(batch)
        if progress:
            progress("importing images", done, total)
    return done


def _write_captions(*, dataset: Dataset, reader, created: array, progress: Progress | None, total: int) -> int:
    done = 0
    records = (r for r in reader.iter_captions() if isinstance(r, CaptionRecord))
    for batch in _batches(records, CAPTION_BATCH):
        image_ids = dict(
            Image.objects.filter(dataset=dataset, source_id__in={r.image_source_id for r in batch}).values_list(
                "source_id", "pk"
            )
        )
        batch = [r for r in batch if r.image_source_id in image_ids]  # the others are out of the split
        existing = set(
            Caption.objects.filter(dataset=dataset, source_id__in=[r.source_id for r in batch]).values_list(
                "source_id", flat=True
            )
        )
        rows = [
            Caption(dataset=dataset, image_id=image_ids[r.image_source_id], source_id=r.source_id, text=r.text)
            for r in batch
            if r.source_id not in existing
        ]
        with transaction.atomic():
            for row in Caption.objects.bulk_create(rows):
                created.append(row.pk)
            Dataset.objects.filter(pk=dataset.pk).update(
                captions_done=F("captions_done") + len(batch), updated_at=timezone.now()
            )
        reset_queries()
        done += len(batch)
        if progress:
            progress("importing captions", done, total)
    return done


def _cleanup(*, created_images: array, created_captions: array, written: list[str]) -> None:
    """Delete the rows this run created and the files no remaining row uses."""
    names = set(written)
    for chunk in _batches(created_captions, 5000):
        Caption.objects.filter(pk__in=chunk).delete()
    for chunk in _batches(created_images, 1000):
        rows = Image.objects.filter(pk__in=chunk)
        for file, thumbnail in rows.values_list("file", "thumbnail"):
            names.update((file, thumbnail))
        rows.delete()
    for chunk in _batches(sorted(names), 1000):
        in_use = set(Image.objects.filter(file__in=chunk).values_list("file", flat=True))
        in_use |= set(Image.objects.filter(thumbnail__in=chunk).values_list("thumbnail", flat=True))
        for name in set(chunk) - in_use:
            try:
                default_storage.delete(name)
            except Exception:  # cleanup goes on; a leftover file is logged, the rows are already gone
                logger.exception("could not delete %s after a failed import", name)


def _dataset_begin(*, name: str, owner, queued: bool = False) -> tuple[Dataset, str | None]:
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


def _dataset_finish(*, dataset: Dataset, status: str, report: dict) -> None:
    check_transition(transitions=DATASET_TRANSITIONS, current=DatasetStatus.IMPORTING, target=status, what="dataset")
    Dataset.objects.filter(pk=dataset.pk).update(status=status, report=report, updated_at=timezone.now())
    dataset.refresh_from_db()


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
    name = _clean_name(name)
    captions_path, images_path = Path(captions_path), Path(images_path)
    split_path = Path(split_path) if split_path else None

    offenders = _Offenders()
    _check_paths(captions_path, images_path, split_path, split, offenders)
    if offenders.count:
        raise ApplicationError("The import cannot start: " + "; ".join(offenders.errors), extra=offenders.extra())

    dataset, previous = _dataset_begin(name=name, owner=owner)
    return _dataset_import_files(
        dataset=dataset,
        previous=previous,
        captions_path=captions_path,
        images_path=images_path,
        split_path=split_path,
        split=split,
        progress=progress,
    )


def _clean_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise ApplicationError("A dataset needs a name of 1 to 200 characters.")
    return name


def _dataset_import_files(
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
    offenders = _Offenders()
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
            plan = _validate(
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
            _dataset_finish(
                dataset=dataset,
                status=failed_status,
                report={"phase": "failed", "source": source, "errors": [f"{type(exc).__name__}: {exc}"]},
            )
            raise
        if offenders.count:
            message = f"The import of {name!r} was refused: {offenders.count} problem(s), nothing was imported."
            _dataset_finish(
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
            _write_images(
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
            _write_captions(
                dataset=dataset, reader=reader, created=created_captions, progress=progress, total=captions_total
            )
        except BaseException as exc:
            _cleanup(created_images=created_images, created_captions=created_captions, written=written)
            known = isinstance(exc, (ImageProblem, MalformedFile))
            detail = str(exc) if known else f"{type(exc).__name__}: {exc}"
            _dataset_finish(
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
    _dataset_finish(dataset=dataset, status=DatasetStatus.READY, report=report)
    return dataset


# --- uploads: stored by the request, imported by a Celery task -------------------------------------------


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


def dataset_import_stalled(*, dataset: Dataset) -> bool:
    """Whether `dataset` is importing but has shown no progress for IMPORT_STALE_AFTER (its worker died,
    or its task was lost): such an import can be queued again with dataset_import_retry."""
    return dataset.status == DatasetStatus.IMPORTING and dataset.updated_at < timezone.now() - IMPORT_STALE_AFTER


def dataset_upload(*, name: str, captions, images, split_file=None, split: str | None = None, owner) -> Dataset:
    """Store uploaded files and queue their import into the dataset `name` (created if missing) on Celery.

    What is cheap is checked here, before anything is stored, and refused with an ApplicationError (400):
    the name, a missing or empty file, the suffixes, images that are not a zip archive, a split name without
    a split file or the reverse; another requester's dataset is a 403 and one already importing a 409. Then
    the dataset is `importing` (report phase "queued"), the files are kept in default_storage under
    `uploads/datasets/<id>/` with a manifest, and `workers.tasks.datasets.dataset_import_task` is enqueued
    after commit; it runs dataset_import's two passes (every image checked with Pillow) and leaves the
    dataset `ready`, or `failed` with every offender in its report. Returns the dataset as it is then
    (already finished when Celery runs eagerly, the embedded default).

    Locking: SELECT ... FOR UPDATE on the Dataset row while moving it to `importing`, so two uploads of the
    same name at once queue one import and refuse the other.
    """
    name = _clean_name(name)
    files = {
        "captions": (captions, _upload_suffix(captions, "captions", CAPTION_SUFFIXES)),
        "images": (images, _upload_suffix(images, "images", (".zip",))),
    }
    if not zipfile.is_zipfile(images):
        raise ApplicationError("The images file is not a zip archive.")
    if split_file is not None:
        files["split_file"] = (split_file, _upload_suffix(split_file, "split", (".json",)))
    split = (split or "").strip()
    if (split_file is None) != (not split):
        raise ApplicationError("Give both a split file and the split name(s), or neither.")

    dataset, previous = _dataset_begin(name=name, owner=owner, queued=True)
    try:
        _upload_store(dataset=dataset, previous=previous, files=files, split=split)
    except BaseException as exc:
        # The files are not all there: no task would find them. Say so instead of staying `importing`.
        failed_status = DatasetStatus.READY if previous == DatasetStatus.READY else DatasetStatus.FAILED
        _dataset_finish(
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
        enqueue_on_commit(DATASET_IMPORT_TASK, dataset_id)
    except Exception as exc:  # outside a transaction the task is sent at once: a broker that is down
        logger.exception("could not queue the import of dataset %s", dataset_id)
        _fail_if_importing(dataset_id=dataset_id, message=f"the import could not be queued: {exc}")
        raise ApplicationError("The import could not be queued; try again in a minute.", status=503) from exc


def dataset_import_retry(*, dataset: Dataset) -> Dataset:
    """Queue the stored upload of `dataset` again, after a failed import (not a refused one: those need new
    files) or an import that stalled (dataset_import_stalled: its worker died or its task was lost).

    Locks the Dataset row. Idempotent: an import that is queued or running (not stalled) is returned
    unchanged, nothing is enqueued. The task resumes: rows a stopped run committed are kept and skipped.
    An import whose upload is gone, or a dataset in any other state, is a 409.
    """
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        if locked.status == DatasetStatus.IMPORTING and not dataset_import_stalled(dataset=locked):
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
    worker is running its import (progress within IMPORT_STALE_AFTER). Locks the Dataset row."""
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().filter(pk=dataset_id).first()
        if dataset is None or dataset.status != DatasetStatus.IMPORTING:
            return None
        if (dataset.report or {}).get("phase") != "queued" and not dataset_import_stalled(dataset=dataset):
            return None
        dataset.report = {"phase": "checking"}
        dataset.images_done = dataset.captions_done = 0
        dataset.save(update_fields=["report", "images_done", "captions_done", "updated_at"])
        return dataset


def _heartbeat(dataset_id: int) -> Progress:
    """Progress of the checking pass into the report (the write pass counts images_done itself); each
    write also moves updated_at, which is what dataset_import_stalled watches."""

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
            _dataset_import_files(
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
