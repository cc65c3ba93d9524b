"""The first pass of an import: read every record and every file, write nothing, and list every offender."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import reset_queries

from annotator.datasets.batches import CAPTION_BATCH, IMAGE_BATCH, Progress, parallel
from annotator.datasets.files.images import ImageProblem, check_image, read_checked_bytes, sha256
from annotator.datasets.files.readers import (
    CaptionRecord,
    ImageRecord,
    Problem,
    SplitFilter,
    caption_too_long,
)
from annotator.datasets.models.dataset import Caption, Dataset, Image

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
    check = ValidationPass(
        dataset=dataset, images=images, split_filter=split_filter, offenders=offenders, progress=progress, pool=pool
    )
    check.images_pass(reader)
    check.captions_pass(reader)
    return check.plan


@dataclass
class ValidationPass:
    """One validation pass: each rule a small method, the ids seen so far, and the plan it builds."""

    dataset: Dataset
    images: object  # an images source (annotator.datasets.files.images): locate, read
    split_filter: SplitFilter | None
    offenders: Offenders
    progress: Progress | None
    pool: ThreadPoolExecutor
    plan: ImportPlan = field(default_factory=ImportPlan)
    included: set[str] = field(default_factory=set)
    excluded: set[str] = field(default_factory=set)
    first_by_hash: dict[bytes, str] = field(default_factory=dict)
    seen_captions: set[str] = field(default_factory=set)
    images_checked: int = 0
    captions_checked: int = 0

    # Images

    def images_pass(self, reader) -> None:
        batch: list[ImageRecord] = []
        for record in reader.iter_images():
            if self.image_admitted(record):
                batch.append(record)
            if len(batch) >= IMAGE_BATCH:
                self.image_batch_check(batch)
                batch = []
        if batch:
            self.image_batch_check(batch)
        if not self.included:
            where = f" in split {', '.join(self.split_filter.splits)}" if self.split_filter else ""
            self.offenders.add("file", None, reader.path.name, "lists no images to import" + where)

    def image_admitted(self, record: ImageRecord | Problem) -> bool:
        """Whether an image record goes on to the file check: not a problem, not a repeat, in the split."""
        if isinstance(record, Problem):
            self.offenders.add_problem(record)
            return False
        if record.source_id in self.included or record.source_id in self.excluded:
            self.offenders.add("image", record.source_id, record.where, "image id appears more than once")
            return False
        if self.split_filter is not None and not self.split_filter.keeps(record):
            self.excluded.add(record.source_id)
            self.plan.images_skipped_by_split += 1
            return False
        self.included.add(record.source_id)
        return True

    def image_file_check(self, record: ImageRecord, known_digest: str | None) -> tuple[str | None, str | None]:
        """(digest, problem) for one file; runs in a pool thread, so it touches no database."""
        key = self.images.locate(record.file_name)
        if key is None:
            return None, f"file {record.file_name!r} not found in {self.images.label}"
        try:
            data = read_checked_bytes(self.images, key)
            digest = sha256(data)
            if known_digest is not None:  # imported before: only the bytes need to be the same
                if known_digest != digest:
                    return None, "was imported before with a different file (import it under a new dataset name)"
                return digest, None
            check_image(data)
        except ImageProblem as problem:
            return None, f"file {record.file_name!r} {problem}"
        return digest, None

    def image_batch_check(self, batch: list[ImageRecord]) -> None:
        existing = dict(
            Image.objects.filter(dataset=self.dataset, source_id__in=[r.source_id for r in batch]).values_list(
                "source_id", "content_hash"
            )
        )
        results = parallel(self.pool, self.image_file_check, [(r, existing.get(r.source_id)) for r in batch])
        hashes: dict[str, str] = {}
        for record, (digest, problem) in zip(batch, results, strict=False):
            if problem is not None:
                self.offenders.add("image", record.source_id, record.where, problem)
            elif record.source_id in existing:
                self.plan.images_unchanged += 1
            else:
                self.plan.images_new += 1
                hashes[record.source_id] = digest
        self.duplicates_note(hashes)
        self.images_checked += len(batch)
        reset_queries()
        if self.progress:
            self.progress("checking images", self.images_checked, 0)

    def duplicates_note(self, hashes: dict[str, str]) -> None:
        """New images whose bytes another image of the dataset (imported or in this file) already has."""
        known = dict(
            Image.objects.filter(dataset=self.dataset, content_hash__in=set(hashes.values())).values_list(
                "content_hash", "source_id"
            )
        )
        for source_id, digest in hashes.items():
            first = self.first_by_hash.setdefault(bytes.fromhex(digest), known.get(digest, source_id))
            if first != source_id:
                self.plan.duplicates.setdefault(digest, [first]).append(source_id)

    # Captions

    def captions_pass(self, reader) -> None:
        batch: list[CaptionRecord] = []
        for record in reader.iter_captions():
            if self.caption_admitted(record):
                batch.append(record)
            if len(batch) >= CAPTION_BATCH:
                self.caption_batch_check(batch)
                batch = []
        if batch:
            self.caption_batch_check(batch)

    def caption_admitted(self, record: CaptionRecord | Problem) -> bool:
        """Whether a caption record goes on to the database check: not a problem, not too long, not a
        repeat, of an image this import keeps."""
        if isinstance(record, Problem):
            self.offenders.add_problem(record)
            return False
        limit = settings.IMPORT_MAX_CAPTION_CHARS
        problem = None
        if len(record.text) > limit:
            problem = caption_too_long(len(record.text), limit)
        elif record.source_id in self.seen_captions:
            problem = "caption id appears more than once"
        if problem is not None:
            self.offenders.add("caption", record.source_id, record.where, problem)
            return False
        self.seen_captions.add(record.source_id)
        if record.image_source_id in self.excluded:
            self.plan.captions_skipped_by_split += 1
            return False
        if record.image_source_id not in self.included:
            problem = f"refers to unknown image {record.image_source_id}"
            self.offenders.add("caption", record.source_id, record.where, problem)
            return False
        return True

    def caption_batch_check(self, batch: list[CaptionRecord]) -> None:
        """Captions imported before must be the same (text and image); the rest are new."""
        existing = {
            source_id: (image_id, text)
            for source_id, image_id, text in Caption.objects.filter(
                dataset=self.dataset, source_id__in=[r.source_id for r in batch]
            ).values_list("source_id", "image__source_id", "text")
        }
        for record in batch:
            if record.source_id not in existing:
                self.plan.captions_new += 1
            elif existing[record.source_id] != (record.image_source_id, record.text):
                problem = "was imported before with a different text or image"
                self.offenders.add("caption", record.source_id, record.where, problem)
            else:
                self.plan.captions_unchanged += 1
        reset_queries()
        self.captions_checked += len(batch)
        if self.progress:
            self.progress("checking captions", self.captions_checked, 0)
