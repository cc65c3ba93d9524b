"""Reads for image pools and gallery enlargements: the preview before the add step and the verified positives."""

from __future__ import annotations

from django.core.files.storage import default_storage
from django.db.models import F

from annotator.datasets.models.dataset import Image
from annotator.finegrained.models.pools import GalleryAddition, GalleryEnlargement, PoolImage
from annotator.labels.models.labels import Label


def _url(name: str) -> str:
    return default_storage.url(name) if name else ""


def enlargement_preview(*, enlargement: GalleryEnlargement, limit: int | None = 50, offset: int = 0) -> list[dict]:
    """Each target (up to `limit`, from `offset`) with its thumbnail and its proposed pool images, best
    first, as the preview page and the API show them before anything is added."""
    targets = list(enlargement.proposal.get("targets", {}).items())
    page = targets[offset : offset + limit if limit else None]
    target_ids = [int(target) for target, _items in page]
    pool_ids = {item[0] for _target, items in page for item in items}
    images = {row["pk"]: row for row in Image.objects.filter(pk__in=target_ids).values("pk", "source_id", "thumbnail")}
    pool = {row["pk"]: row for row in PoolImage.objects.filter(pk__in=pool_ids).values("pk", "source_id", "thumbnail")}
    result = []
    for target, items in page:
        image = images.get(int(target))
        if image is None:
            continue
        result.append(
            {
                "target_id": image["pk"],
                "target_source_id": image["source_id"],
                "target_thumbnail": _url(image["thumbnail"]),
                "proposed": [
                    {
                        "pool_image_id": pool_id,
                        "source_id": pool[pool_id]["source_id"],
                        "thumbnail": default_storage.url(pool[pool_id]["thumbnail"])
                        if pool[pool_id]["thumbnail"]
                        else "",
                        "score": score,
                        "via": via,
                        "image_score": image_score,
                        "caption_score": caption_score,
                    }
                    for pool_id, score, via, image_score, caption_score in items
                    if pool_id in pool
                ],
            }
        )
    return result


def enlargement_verified_positives(*, enlargement: GalleryEnlargement) -> set[tuple[int, int]]:
    """(caption pk, added image pk) pairs its verification campaign labelled positive (the campaign's own
    label model); empty before any label."""
    if enlargement.verification_id is None:
        return set()
    added = set(GalleryAddition.objects.filter(enlargement=enlargement).values_list("image_id", flat=True))
    rows = Label.objects.filter(
        pair__campaign_id=enlargement.verification_id, is_positive=True, method=F("pair__campaign__label_model")
    ).values_list("pair__caption_id", "pair__image_id")
    return {(caption, image) for caption, image in rows if image in added}
