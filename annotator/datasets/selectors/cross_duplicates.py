"""Test images repeated in another dataset (ECCV Caption App. C: "test images duplicated in the training
split"): every image of `train` that is byte-identical to an image of `test`, or nearly identical (within
NEAR_DUPLICATE_BITS of its 256-bit pHash and, read in colour, within NEAR_DUPLICATE_PIXELS; the same rule
the pool import uses, annotator/analysis/perceptual.py). Reads the pictures' thumbnails; no writes."""

from __future__ import annotations

import logging

from django.core.files.storage import default_storage

from annotator.analysis.perceptual import (
    NEAR_DUPLICATE_BITS,
    NEAR_DUPLICATE_PIXELS,
    candidates,
    perceptual_hash,
    pixel_distance,
    tiny_rgb,
)
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Dataset, Image

logger = logging.getLogger(__name__)


def _pictures(dataset: Dataset) -> list[tuple[int, str, str, bytes | None]]:
    """(pk, source id, sha256, picture bytes or None) of the dataset's own images (not gallery additions)."""
    rows = Image.objects.filter(dataset=dataset, gallery_addition__isnull=True).order_by("pk")
    found = []
    for pk, source_id, content_hash, thumbnail, file in rows.values_list(
        "pk", "source_id", "content_hash", "thumbnail", "file"
    ).iterator(chunk_size=2000):
        try:
            with default_storage.open(thumbnail or file, "rb") as handle:
                data = handle.read()
        except Exception:  # a missing picture: the byte-identical check still holds for it
            logger.warning("no picture to hash for image %s", pk)
            data = None
        found.append((pk, source_id, content_hash, data))
    return found


def datasets_duplicates(*, test: Dataset, train: Dataset) -> dict:
    """{"test", "train", "identical", "near", "pairs": [{"train_image", "test_image", "kind", "distance",
    "pixel_difference"}]}: the images of `train` that repeat an image of `test` (source ids)."""
    if test.pk == train.pk:
        raise ApplicationError("Compare two different datasets (a test split against a training split).")
    test_pictures = _pictures(test)
    by_hash = {content_hash: source for _, source, content_hash, _ in test_pictures if content_hash}
    hashes, tiny = [], {}
    for _, source, _, data in test_pictures:
        if data is not None:
            hashes.append((perceptual_hash(data), source))
            tiny[source] = data
    pairs = []
    for _, source, content_hash, data in _pictures(train):
        if content_hash and content_hash in by_hash:
            pairs.append(
                {"train_image": source, "test_image": by_hash[content_hash], "kind": "identical", "distance": 0}
            )
            continue
        if data is None:
            continue
        mine = None
        for test_source, distance in candidates(perceptual_hash(data), hashes, within=NEAR_DUPLICATE_BITS):
            mine = tiny_rgb(data) if mine is None else mine
            difference = pixel_distance(mine, tiny_rgb(tiny[test_source]))
            if difference <= NEAR_DUPLICATE_PIXELS:
                pairs.append(
                    {
                        "train_image": source,
                        "test_image": test_source,
                        "kind": "near",
                        "distance": distance,
                        "pixel_difference": round(difference, 4),
                    }
                )
                break
    return {
        "test": test.name,
        "train": train.name,
        "identical": sum(1 for pair in pairs if pair["kind"] == "identical"),
        "near": sum(1 for pair in pairs if pair["kind"] == "near"),
        "pairs": pairs,
    }
