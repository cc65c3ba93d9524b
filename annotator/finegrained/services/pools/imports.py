"""Importing an outside image pool: images without captions (a folder or a zip) attached to a dataset.

Every image is checked like a dataset import's (Pillow, format, size limits), hashed (sha256 of the bytes)
and perceptually hashed (pHash). One that repeats a test image of the dataset, byte for byte or within
NEAR_DUPLICATE_BITS of its pHash, is reported and not added; so is a second copy inside the pool. A page or
API upload is stored and imported by a Celery task with progress; the command line imports at once.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from annotator.analysis.perceptual import (
    NEAR_DUPLICATE_BITS,
    NEAR_DUPLICATE_PIXELS,
    candidates,
    perceptual_hash,
    pixel_distance,
    tiny_rgb,
)
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_stalled
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_long_on_commit
from annotator.datasets.files.images import (
    EXTENSIONS,
    FolderImages,
    ImageProblem,
    ZipImages,
    make_thumbnail,
    read_checked_bytes,
    sha256,
)
from annotator.datasets.files.screening import IMAGE_SUFFIXES, screen_images_zip
from annotator.datasets.models.dataset import Dataset, DatasetStatus, Image
from annotator.finegrained.models.pools import POOL_TRANSITIONS, ImagePool, PoolImage, PoolStatus

logger = logging.getLogger(__name__)

UPLOAD_FOLDER = "uploads/pools"
PROGRESS_EVERY = 25
MAX_OFFENDERS = 50


def _upload_name(pool_id: int) -> str:
    return f"{UPLOAD_FOLDER}/{pool_id}/images.zip"


def _members(source) -> list[tuple[str, object]]:
    """(name, key) of every file with an image suffix, in name order; other files are skipped."""
    if isinstance(source, FolderImages):
        paths = sorted(p for p in source.root.rglob("*") if p.is_file())
        items = [(str(p.relative_to(source.root)), p) for p in paths]
    else:
        items = sorted(source.members.items())
    return [(name, key) for name, key in items if PurePosixPath(name).suffix.lower() in IMAGE_SUFFIXES]


def _check_name(*, dataset: Dataset, name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise ApplicationError("Name the pool (1 to 200 characters).")
    if dataset.status != DatasetStatus.READY:
        raise ApplicationError(f"Dataset {dataset.name} is {dataset.status}; a pool joins a ready dataset.", status=409)
    if ImagePool.objects.filter(dataset=dataset, name=name).exists():
        raise ApplicationError(f"Dataset {dataset.name} has a pool named {name!r} already.", status=409)
    return name


def _test_image_hashes(dataset: Dataset) -> tuple[dict[str, int], list[tuple[str, int]]]:
    """sha256 -> image pk, and (pHash, image pk) of the dataset's test images (its own, not added ones).

    The pHash comes from the thumbnail, the same picture at a smaller size, so a large original is not read
    again; pHash works on a 32 x 32 copy either way."""
    exact, perceptual = {}, []
    rows = Image.objects.filter(dataset=dataset, gallery_addition__isnull=True).values_list(
        "pk", "content_hash", "thumbnail", "file"
    )
    for pk, content_hash, thumbnail, file in rows.iterator(chunk_size=2000):
        exact.setdefault(content_hash, pk)
        try:
            with default_storage.open(thumbnail or file, "rb") as handle:
                perceptual.append((perceptual_hash(handle.read()), pk))
        except Exception:  # a missing thumbnail: the byte-identical check still holds for it
            logger.warning("no picture to hash for image %s", pk)
    return exact, perceptual


def _near_duplicate(data: bytes, phash: str, perceptual: list[tuple[str, int]]) -> dict | None:
    """The test image this picture nearly repeats: within NEAR_DUPLICATE_BITS of its pHash and, read in
    colour, within NEAR_DUPLICATE_PIXELS of it (pHash alone cannot tell colours of equal brightness apart)."""
    found = candidates(phash, perceptual, within=NEAR_DUPLICATE_BITS)
    if not found:
        return None
    mine = tiny_rgb(data)
    for image_id, distance in found:
        row = Image.objects.filter(pk=image_id).values_list("thumbnail", "file").first()
        if row is None:
            continue
        with default_storage.open(row[0] or row[1], "rb") as handle:
            difference = pixel_distance(mine, tiny_rgb(handle.read()))
        if difference <= NEAR_DUPLICATE_PIXELS:
            return {"image_id": image_id, "distance": distance, "pixel_difference": round(difference, 4)}
    return None


def _import_source(pool: ImagePool, source) -> dict:
    """Read, check and store every image of `source` into `pool`; the report. Progress commits as it goes."""
    members = _members(source)
    if not members:
        raise ApplicationError(
            f"{source.label} holds no images (files ending in {', '.join(sorted(IMAGE_SUFFIXES))}).",
        )
    ImagePool.objects.filter(pk=pool.pk).update(images_total=len(members), images_done=0, updated_at=timezone.now())
    exact, perceptual = _test_image_hashes(pool.dataset)
    seen = dict(PoolImage.objects.filter(pool=pool).values_list("content_hash", "source_id"))
    report = {"imported": 0, "duplicates": [], "offenders": [], "repeated_in_pool": 0, "skipped_existing": 0}
    for done, (name, key) in enumerate(members, start=1):
        source_id = PurePosixPath(name).with_suffix("").as_posix()[:64]
        try:
            data = read_checked_bytes(source, key)
            checked, thumb = make_thumbnail(data)
            digest = sha256(data)
            phash = perceptual_hash(data)
        except ImageProblem as problem:
            if len(report["offenders"]) < MAX_OFFENDERS:
                report["offenders"].append(f"{name} {problem}")
            report["offender_count"] = report.get("offender_count", 0) + 1
            continue
        if PoolImage.objects.filter(pool=pool, source_id=source_id).exists():
            report["skipped_existing"] += 1  # a retried import: this file made it the first time
        elif digest in exact:
            report["duplicates"].append({"file": name, "kind": "identical", "image_id": exact[digest], "distance": 0})
        elif (near := _near_duplicate(data, phash, perceptual)) is not None:
            report["duplicates"].append({"file": name, "kind": "near", **near})
        elif digest in seen:
            report["repeated_in_pool"] += 1
        else:
            base = f"pool-{pool.pk}/{digest[:2]}/{digest}"
            file = default_storage.save(f"images/{base}{EXTENSIONS.get(checked.format, '.img')}", ContentFile(data))
            thumbnail = default_storage.save(f"thumbnails/{base}.jpg", ContentFile(thumb))
            PoolImage.objects.create(
                pool=pool,
                source_id=source_id,
                file_name=name[:500],
                file=file,
                thumbnail=thumbnail,
                content_hash=digest,
                perceptual_hash=phash,
                width=checked.width,
                height=checked.height,
            )
            seen[digest] = source_id
            report["imported"] += 1
        if done % PROGRESS_EVERY == 0 or done == len(members):
            ImagePool.objects.filter(pk=pool.pk).update(images_done=done, updated_at=timezone.now())
    source_of = dict(
        Image.objects.filter(pk__in=[d["image_id"] for d in report["duplicates"]]).values_list("pk", "source_id")
    )
    for duplicate in report["duplicates"]:
        duplicate["image_source_id"] = source_of.get(duplicate["image_id"], "")
    if report["imported"] == 0 and not PoolImage.objects.filter(pool=pool).exists():
        raise ApplicationError(
            "No image of the pool could be added: "
            + (
                f"{report.get('offender_count', 0)} are not readable images"
                if report["offenders"]
                else "every one repeats a test image"
            )
            + ".",
            extra={"report": report},
        )
    return report


def _finish(pool_id: int, *, status: str, report: dict) -> ImagePool:
    with transaction.atomic():
        pool = ImagePool.objects.select_for_update().get(pk=pool_id)
        check_transition(transitions=POOL_TRANSITIONS, current=pool.status, target=status, what="pool")
        pool.status = status
        pool.report = report
        pool.save(update_fields=["status", "report", "updated_at"])
    return pool


def pool_import(*, dataset: Dataset, name: str, images_path: str | Path, user=None) -> ImagePool:
    """Import the images under a folder or in a zip as the pool `name` of `dataset`, here and now (the
    command line). Raises ApplicationError (nothing kept) when the source holds no usable image; a pool
    whose import fails half-way is left `failed` with the reason in its report. No locks beyond the row."""
    name = _check_name(dataset=dataset, name=name)
    path = Path(images_path)
    if not path.exists():
        raise ApplicationError(f"{path} does not exist.", status=404)
    try:
        source = FolderImages(path) if path.is_dir() else ZipImages(path)
    except ImageProblem as problem:
        raise ApplicationError(str(problem)) from problem
    pool = ImagePool.objects.create(dataset=dataset, name=name, created_by=user, report={"phase": "importing"})
    try:
        report = _import_source(pool, source)
    except ApplicationError:
        pool.delete()
        raise
    finally:
        source.close()
    return _finish(pool.pk, status=PoolStatus.READY, report=report)


def pool_upload(*, dataset: Dataset, name: str, images, user) -> ImagePool:
    """Store an uploaded images zip as the pool `name` of `dataset` and queue its import (a Celery task,
    after commit). Screens the zip first (ApplicationError 400/413: not a zip, a zip bomb, no image in it);
    nothing is stored for a refused upload. The caller has checked the person may manage the dataset."""
    name = _check_name(dataset=dataset, name=name)
    if images is None or not getattr(images, "size", 0):
        raise ApplicationError("The images file is missing or empty; upload a zip of images.")
    if not (images.name or "").lower().endswith(".zip"):
        raise ApplicationError("Upload the pool's images as one .zip file.", status=415)
    screen_images_zip(images)
    try:
        with zipfile.ZipFile(images) as archive:
            names = [info.filename for info in archive.infolist() if not info.is_dir()]
    finally:
        images.seek(0)
    if not any(PurePosixPath(n).suffix.lower() in IMAGE_SUFFIXES for n in names):
        raise ApplicationError(
            "The zip holds no images (files ending in " + ", ".join(sorted(IMAGE_SUFFIXES)) + ")."
            if names
            else "The zip is empty."
        )
    with transaction.atomic():
        pool = ImagePool.objects.create(dataset=dataset, name=name, created_by=user, report={"phase": "queued"})
        default_storage.save(_upload_name(pool.pk), images)
        enqueue_long_on_commit(task_names.POOL_IMPORT, pool.pk)
    pool.refresh_from_db()
    return pool


def pool_import_retry(*, pool: ImagePool) -> ImagePool:
    """Queue a failed or stalled pool import again (images already in the pool are kept and skipped).
    Takes the pool's row lock; a pool that is importing and alive, or ready, is a 409."""
    with transaction.atomic():
        pool = ImagePool.objects.select_for_update().get(pk=pool.pk)
        if pool.status == PoolStatus.READY or (pool.status == PoolStatus.IMPORTING and not job_stalled(pool)):
            raise ApplicationError(
                f"This pool is {pool.status}; only a failed or stalled import is retried.", status=409
            )
        if not default_storage.exists(_upload_name(pool.pk)):
            raise ApplicationError("The upload of this pool is gone; upload it again as a new pool.", status=409)
        if pool.status == PoolStatus.FAILED:
            check_transition(
                transitions=POOL_TRANSITIONS, current=pool.status, target=PoolStatus.IMPORTING, what="pool"
            )
        pool.status = PoolStatus.IMPORTING
        pool.report = {"phase": "queued"}
        pool.save(update_fields=["status", "report", "updated_at"])
        enqueue_long_on_commit(task_names.POOL_IMPORT, pool.pk)
    return pool


def pool_import_run(*, pool_id: int) -> str:
    """The Celery task's body: import the stored upload of pool `pool_id`; returns its status afterwards.

    Idempotent: a pool no longer importing is left alone; images already in it (a redelivered or retried
    task) are skipped by source id. Never raises for a bad upload: the pool becomes `failed` with the reason.
    """
    pool = ImagePool.objects.filter(pk=pool_id).select_related("dataset").first()
    if pool is None:
        return "missing"
    if pool.status != PoolStatus.IMPORTING:
        return pool.status
    ImagePool.objects.filter(pk=pool_id).update(report={"phase": "importing"}, updated_at=timezone.now())
    folder = Path(tempfile.mkdtemp(prefix="vericap-pool-"))
    try:
        local = folder / "images.zip"
        with default_storage.open(_upload_name(pool_id), "rb") as handle, open(local, "wb") as out:
            shutil.copyfileobj(handle, out)
        source = ZipImages(local)
        try:
            report = _import_source(pool, source)
        finally:
            source.close()
    except (ApplicationError, ImageProblem) as error:
        message = getattr(error, "message", str(error))
        return _finish(pool_id, status=PoolStatus.FAILED, report={"errors": [message]}).status
    except Exception as exc:
        logger.exception("the import of pool %s failed", pool_id)
        return _finish(pool_id, status=PoolStatus.FAILED, report={"errors": [f"{type(exc).__name__}: {exc}"]}).status
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    default_storage.delete(_upload_name(pool_id))
    return _finish(pool_id, status=PoolStatus.READY, report=report).status
