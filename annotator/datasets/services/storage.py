"""The second pass of an import: store files and thumbnails, write image and caption rows in batches, and
undo a run that stopped half-way.
"""

from __future__ import annotations

import logging
from array import array
from concurrent.futures import ThreadPoolExecutor

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import reset_queries, transaction
from django.db.models import F
from django.utils import timezone

from annotator.datasets.batches import (
    CAPTION_BATCH,
    IMAGE_BATCH,
    PARALLEL_FILES,
    Progress,
    batches,
    parallel,
)
from annotator.datasets.files.images import (
    EXTENSIONS,
    ImageProblem,
    make_thumbnail,
    read_checked_bytes,
    sha256,
)
from annotator.datasets.files.readers import CaptionRecord, ImageRecord, SplitFilter
from annotator.datasets.models.dataset import Caption, Dataset, Image

logger = logging.getLogger(__name__)


def _store(name: str, data: bytes, written: list[str]) -> str:
    stored = default_storage.save(name, ContentFile(data))
    written.append(stored)
    return stored


def write_images(
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

    for batch in batches(records, IMAGE_BATCH):
        existing = set(
            Image.objects.filter(dataset=dataset, source_id__in=[r.source_id for r in batch]).values_list(
                "source_id", flat=True
            )
        )
        fresh = [r for r in batch if r.source_id not in existing]
        rows: list[Image] = []
        stored: dict[str, tuple[str, str]] = {}  # content hash -> (file, thumbnail) for this batch
        # Files are handled PARALLEL_FILES at a time: their bytes are the only thing held in memory.
        for chunk in batches(fresh, PARALLEL_FILES):
            prepared = parallel(pool, prepare, [(record,) for record in chunk])
            digests = {item[1] for item in prepared} - set(stored)
            stored.update(
                (content_hash, (file, thumbnail))
                for content_hash, file, thumbnail in Image.objects.filter(
                    dataset=dataset, content_hash__in=digests
                ).values_list("content_hash", "file", "thumbnail")
            )
            new = {item[1]: item for item in prepared if item[1] not in stored}  # a duplicate shares one copy
            written = parallel(pool, store, [(item,) for item in new.values()])
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


def write_captions(*, dataset: Dataset, reader, created: array, progress: Progress | None, total: int) -> int:
    done = 0
    records = (r for r in reader.iter_captions() if isinstance(r, CaptionRecord))
    for batch in batches(records, CAPTION_BATCH):
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


def cleanup(*, created_images: array, created_captions: array, written: list[str]) -> None:
    """Delete the rows this run created and the files no remaining row uses."""
    names = set(written)
    for chunk in batches(created_captions, 5000):
        Caption.objects.filter(pk__in=chunk).delete()
    for chunk in batches(created_images, 1000):
        rows = Image.objects.filter(pk__in=chunk)
        for file, thumbnail in rows.values_list("file", "thumbnail"):
            names.update((file, thumbnail))
        rows.delete()
    for chunk in batches(sorted(names), 1000):
        in_use = set(Image.objects.filter(file__in=chunk).values_list("file", flat=True))
        in_use |= set(Image.objects.filter(thumbnail__in=chunk).values_list("thumbnail", flat=True))
        for name in set(chunk) - in_use:
            try:
                default_storage.delete(name)
            except Exception:  # cleanup goes on; a leftover file is logged, the rows are already gone
                logger.exception("could not delete %s after a failed import", name)
