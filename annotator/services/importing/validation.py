"""The first pass of an import: read every record and every file, write nothing, and list every offender."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import reset_queries

from annotator.importing.images import ImageProblem, check_image, read_checked_bytes, sha256
from annotator.importing.readers import CaptionRecord, ImageRecord, Problem, SplitFilter, caption_too_long
from annotator.models import Caption, Dataset, Image
from annotator.services.importing.batches import CAPTION_BATCH, IMAGE_BATCH, Progress, parallel

MAX_LISTED_ERRORS = 10_000  # past this the report says how many more; such a file is in the wrong format


class Offenders:
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
class ImportPlan:
    """What the validation pass found: what the write pass will do."""

    images_new: int = 0
    images_unchanged: int = 0
    images_skipped_by_split: int = 0
    captions_new: int = 0
    captions_unchanged: int = 0
    captions_skipped_by_split: int = 0
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # content hash -> image source ids


def check_paths(
    captions_path: Path, images_path: Path, split_path: Path | None, split: str | None, offenders: Offenders
) -> None:
    if not captions_path.is_file():
        offenders.add("file", None, str(captions_path), "captions file not found")
    if not images_path.exists():
        offenders.add("file", None, str(images_path), "images folder or zip not found")
    if split_path is not None and not split_path.is_file():
        offenders.add("file", None, str(split_path), "split file not found")
    if (split_path is None) != (not split):
        offenders.add("file", None, "split", "give both a split file and the split name(s), or neither")


def validate(
    *,
    dataset: Dataset,
    reader,
    images,
    split_filter: SplitFilter | None,
    offenders: Offenders,
    progress: Progress | None,
    pool: ThreadPoolExecutor,
) -> ImportPlan:
    """First streaming pass: read every record and every image file, write nothing.

    Keeps only ids (and the first image id per content hash) in memory, so memory grows with the number
    of ids, not with the files: MS-COCO's 617K caption ids take tens of MB.
    """
    plan = ImportPlan()
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
        results = parallel(pool, inspect, [(r, existing.get(r.source_id)) for r in batch])
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
    max_caption_chars = settings.IMPORT_MAX_CAPTION_CHARS
    for record in reader.iter_captions():
        if isinstance(record, Problem):
            offenders.add_problem(record)
            continue
        if len(record.text) > max_caption_chars:
            offenders.add(
                "caption", record.source_id, record.where, caption_too_long(len(record.text), max_caption_chars)
            )
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
