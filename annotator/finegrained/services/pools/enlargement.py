"""Gallery enlargement (MSCOCO-FG, Sec. 3.1): propose each target image's most similar pool images, show the
proposal, and add it to the dataset only on an explicit add.

The similarities come from the machine annotators on a GPU worker (workers/ranking/pool.py): image-image
from an annotator that sees pixels (`visual`, `clip`), caption-image from one that reads text and sees
pixels (`clip`). Pivot annotators cannot score a pool image: it has no caption to pivot through. The two
lists are merged by reciprocal rank fusion (each list contributes 1 / (RRF_K + rank)), duplicates are
removed across targets (a pool image goes to the target that wants it most; the others take their next
candidates) and `keep` pool images per target are proposed.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_stalled
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_long_on_commit
from annotator.datasets.models.dataset import Image
from annotator.finegrained.models.pools import (
    ENLARGEMENT_TRANSITIONS,
    EnlargementStatus,
    GalleryAddition,
    GalleryEnlargement,
    ImagePool,
    PoolImage,
    PoolStatus,
)
from annotator.ranking.models.ranking import AnnotatorKind, MachineAnnotator

logger = logging.getLogger(__name__)

RRF_K = 60
MAX_K = 1000
IMAGE_KINDS = (AnnotatorKind.VISUAL, AnnotatorKind.CLIP)  # they see pixels: image-image similarity
CAPTION_KINDS = (AnnotatorKind.CLIP,)  # they read text and see pixels: caption-image similarity


def _annotator(name: str, kinds: tuple, what: str) -> MachineAnnotator:
    annotator = MachineAnnotator.objects.filter(name=name).first()
    if annotator is None and name == AnnotatorKind.VISUAL:
        annotator, _ = MachineAnnotator.objects.get_or_create(name=name, defaults={"kind": AnnotatorKind.VISUAL})
    if annotator is None:
        raise ApplicationError(f"No machine annotator named {name!r}.", status=404)
    if annotator.kind not in kinds:
        raise ApplicationError(
            f"{name} ({annotator.kind}) cannot give {what} similarity of pool images; use one of the kinds "
            f"{', '.join(kinds)} (a pool image has no caption for a pivot annotator)."
        )
    return annotator


def enlargement_request(
    *,
    pool: ImagePool,
    user=None,
    image_annotator: str = "visual",
    caption_annotator: str = "",
    k_image: int = 20,
    k_caption: int = 20,
    keep: int = 9,
) -> GalleryEnlargement:
    """Queue the scoring of `pool` against its dataset's test images (a task on the `gpu` queue, after
    commit). Refused (400) for bad sizes or annotators, 409 for a pool that is not ready. The proposal is
    previewed before anything joins the dataset (enlargement_add). Not idempotent: each call is a new one.
    Long work: started from a request on eager Celery it runs beside the request (annotator.core.queue
    .enqueue_long_on_commit); from a command it has finished when this returns."""
    if pool.status != PoolStatus.READY:
        raise ApplicationError(f"Pool {pool.name} is {pool.status}; enlarge from a ready pool.", status=409)
    for label, value in (("k_image", k_image), ("k_caption", k_caption)):
        if not 0 <= int(value) <= MAX_K:
            raise ApplicationError(f"{label} is between 0 and {MAX_K}.")
    if not 1 <= int(keep) <= MAX_K:
        raise ApplicationError(f"keep is between 1 and {MAX_K}.")
    image_annotator = (image_annotator or "").strip()
    caption_annotator = (caption_annotator or "").strip()
    if not image_annotator:
        k_image = 0
    if not caption_annotator:
        k_caption = 0
    if not k_image and not k_caption:
        raise ApplicationError("Choose an image-image annotator, a caption-image annotator, or both (k above 0).")
    if k_image:
        _annotator(image_annotator, IMAGE_KINDS, "image-image")
    if k_caption:
        _annotator(caption_annotator, CAPTION_KINDS, "caption-image")
    with transaction.atomic():
        enlargement = GalleryEnlargement.objects.create(
            pool=pool,
            dataset=pool.dataset,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            image_annotator=image_annotator if k_image else "",
            caption_annotator=caption_annotator if k_caption else "",
            k_image=k_image,
            k_caption=k_caption,
            keep=keep,
            queued_at=timezone.now(),
        )
        enqueue_long_on_commit(task_names.ENLARGEMENT, enlargement.pk)
    enlargement.refresh_from_db()
    return enlargement


def enlargement_claim(*, enlargement_id: int) -> GalleryEnlargement | None:
    """queued -> running under the row lock (SKIP LOCKED); None when another worker has it or it is not
    queued (a duplicate task does nothing)."""
    with transaction.atomic():
        enlargement = GalleryEnlargement.objects.select_for_update(skip_locked=True).filter(pk=enlargement_id).first()
        if enlargement is None or enlargement.status != EnlargementStatus.QUEUED:
            return None
        enlargement.status = EnlargementStatus.RUNNING
        enlargement.started_at = timezone.now()
        enlargement.error = ""
        enlargement.save(update_fields=["status", "started_at", "error"])
    return enlargement


def enlargement_fail(*, enlargement_id: int, message: str) -> None:
    GalleryEnlargement.objects.filter(
        pk=enlargement_id, status__in=[EnlargementStatus.RUNNING, EnlargementStatus.QUEUED]
    ).update(status=EnlargementStatus.FAILED, error=message[:2000], finished_at=timezone.now())


def enlargement_retry(*, enlargement: GalleryEnlargement) -> GalleryEnlargement:
    """Queue a failed or stalled enlargement again (its row lock; 409 for one proposed, added or alive)."""
    with transaction.atomic():
        enlargement = GalleryEnlargement.objects.select_for_update().get(pk=enlargement.pk)
        stalled = job_stalled(enlargement)
        if enlargement.status != EnlargementStatus.FAILED and not stalled:
            raise ApplicationError(
                f"This enlargement is {enlargement.status}; only a failed or stalled one is queued again.", status=409
            )
        if enlargement.status == EnlargementStatus.FAILED:
            check_transition(
                transitions=ENLARGEMENT_TRANSITIONS,
                current=enlargement.status,
                target=EnlargementStatus.QUEUED,
                what="enlargement",
            )
        enlargement.status = EnlargementStatus.QUEUED
        enlargement.queued_at = timezone.now()
        enlargement.error = ""
        enlargement.save(update_fields=["status", "queued_at", "error"])
        enqueue_long_on_commit(task_names.ENLARGEMENT, enlargement.pk)
    return enlargement


def combine_proposals(
    *,
    image_lists: dict[int, list[tuple[int, float]]],
    caption_lists: dict[int, list[tuple[int, float]]],
    keep: int,
) -> dict:
    """Merge each target's image-image and caption-image lists (best first) by reciprocal rank fusion and
    remove duplicates across targets; the proposal JSON and its counts. Pure and deterministic."""
    fused: dict[tuple[int, int], list] = {}
    for via, lists in (("i2i", image_lists), ("t2i", caption_lists)):
        for target, items in lists.items():
            for rank, (pool_id, score) in enumerate(items, start=1):
                entry = fused.setdefault((int(target), int(pool_id)), [0.0, set(), None, None])
                entry[0] += 1.0 / (RRF_K + rank)
                entry[1].add(via)
                entry[2 if via == "i2i" else 3] = round(float(score), 6)
    ordered = sorted(fused.items(), key=lambda item: (-item[1][0], item[0][0], item[0][1]))
    taken: set[int] = set()
    chosen: dict[int, list] = defaultdict(list)
    wanted = {target for target, _pool in fused}
    naive: dict[int, list[int]] = defaultdict(list)  # each target's own top `keep`, before duplicates go
    for (target, pool_id), _entry in ordered:
        if len(naive[target]) < keep:
            naive[target].append(pool_id)
    for (target, pool_id), (score, vias, image_score, caption_score) in ordered:
        if len(chosen[target]) >= keep or pool_id in taken:
            continue
        taken.add(pool_id)
        via = "both" if len(vias) == 2 else next(iter(vias))
        chosen[target].append([pool_id, round(score, 6), via, image_score, caption_score])
    via_counts = defaultdict(int)
    for items in chosen.values():
        for item in items:
            via_counts[item[2]] += 1
    proposed = sum(len(items) for items in chosen.values())
    owner = {item[0]: target for target, items in chosen.items() for item in items}
    # Entries of a target's own top `keep` whose image went to another target that wanted it more.
    removed = sum(1 for target, ids in naive.items() for pool_id in ids if owner.get(pool_id) != target)
    return {
        "targets": {str(target): chosen[target] for target in sorted(chosen)},
        "counts": {
            "targets": len(wanted),
            "targets_with_additions": sum(1 for items in chosen.values() if items),
            "candidates_scored": len(fused),
            "proposed": proposed,
            "unique_pool_images": len(taken),
            "duplicates_removed": removed,
            "per_target_mean": round(proposed / len(wanted), 3) if wanted else 0.0,
            "via": dict(via_counts),
            "keep": keep,
        },
    }


def enlargement_record(
    *,
    enlargement_id: int,
    image_lists: dict[int, list[tuple[int, float]]],
    caption_lists: dict[int, list[tuple[int, float]]],
) -> GalleryEnlargement:
    """Store the scored lists' combined proposal; running -> proposed under the row lock. A run that is no
    longer running (cancelled by a retry, failed) is left alone."""
    with transaction.atomic():
        enlargement = GalleryEnlargement.objects.select_for_update().get(pk=enlargement_id)
        if enlargement.status != EnlargementStatus.RUNNING:
            return enlargement
        enlargement.proposal = combine_proposals(
            image_lists=image_lists, caption_lists=caption_lists, keep=enlargement.keep
        )
        enlargement.status = EnlargementStatus.PROPOSED
        enlargement.finished_at = timezone.now()
        enlargement.save(update_fields=["proposal", "status", "finished_at"])
    return enlargement


def _added_source_id(pool_image: PoolImage) -> str:
    return f"pool{pool_image.pool_id}:{pool_image.source_id}"[:64]


def enlargement_add(*, enlargement: GalleryEnlargement) -> GalleryEnlargement:
    """Add the proposal to the dataset: each proposed pool image becomes an Image of the dataset (source id
    `pool<pool id>:<file name>`, same file) and a GalleryAddition records it with its target, rank, score
    and which similarity chose it. proposed -> added under the enlargement's row lock, in one transaction.
    Idempotent: an added enlargement is returned as it is. A pool image an earlier enlargement already
    added to this dataset is skipped and counted (`already_in_gallery`)."""
    with transaction.atomic():
        enlargement = GalleryEnlargement.objects.select_for_update().get(pk=enlargement.pk)
        if enlargement.status == EnlargementStatus.ADDED:
            return enlargement
        check_transition(
            transitions=ENLARGEMENT_TRANSITIONS,
            current=enlargement.status,
            target=EnlargementStatus.ADDED,
            what="enlargement",
        )
        targets = enlargement.proposal.get("targets", {})
        pool_ids = {item[0] for items in targets.values() for item in items}
        pool_images = PoolImage.objects.in_bulk(pool_ids)
        existing = set(
            Image.objects.filter(
                dataset_id=enlargement.dataset_id, source_id__in=[_added_source_id(p) for p in pool_images.values()]
            ).values_list("source_id", flat=True)
        )
        skipped = 0
        additions = []
        for target, items in targets.items():
            rank = 0
            for pool_id, score, via, _image_score, _caption_score in items:
                pool_image = pool_images.get(pool_id)
                if pool_image is None or _added_source_id(pool_image) in existing:
                    skipped += 1
                    continue
                rank += 1
                image = Image.objects.create(
                    dataset_id=enlargement.dataset_id,
                    source_id=_added_source_id(pool_image),
                    file_name=pool_image.file_name,
                    file=pool_image.file.name,
                    thumbnail=pool_image.thumbnail.name,
                    content_hash=pool_image.content_hash,
                    width=pool_image.width,
                    height=pool_image.height,
                )
                additions.append(
                    GalleryAddition(
                        enlargement=enlargement,
                        target_id=int(target),
                        pool_image=pool_image,
                        image=image,
                        rank=rank,
                        score=score,
                        via=via,
                    )
                )
        GalleryAddition.objects.bulk_create(additions)
        enlargement.status = EnlargementStatus.ADDED
        enlargement.added_at = timezone.now()
        proposal = dict(enlargement.proposal)
        proposal["counts"] = {**proposal.get("counts", {}), "added": len(additions), "already_in_gallery": skipped}
        enlargement.proposal = proposal
        enlargement.save(update_fields=["status", "added_at", "proposal"])
    return enlargement
