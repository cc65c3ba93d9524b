"""Scoring an outside image pool against a dataset's test images for gallery enlargement.

Image-image: the targets and the pool images encoded by an annotator that sees pixels (`visual`, centred
on targets and pool together as a ranking run centres on its collection; `clip`), cosine similarity, each
target's top k_image. Caption-image: every caption of a target against the pool with an annotator that
reads text and sees pixels (`clip`); a pool image's score for the target is its best over the target's
captions, each caption contributing its own top k_caption. The similarity blocks are computed a chunk of
targets at a time, so the full matrix never exists.
"""

from __future__ import annotations

from collections import defaultdict

import torch
from django.conf import settings

from annotator.finegrained.services.pools.enlargement import (
    enlargement_claim,
    enlargement_fail,
    enlargement_record,
)
from annotator.models import Caption, GalleryEnlargement, Image, MachineAnnotator, PoolImage
from workers.ranking.annotators import load_annotator, resolve_device
from workers.ranking.pipeline import load_pil, ranking_settings

CHUNK = 512


def encode_image_files(annotator, files: list[str], batch: int) -> torch.Tensor:
    parts = []
    for start in range(0, len(files), batch):
        parts.append(annotator.encode_images([load_pil(name) for name in files[start : start + batch]]))
    return torch.cat(parts) if parts else torch.zeros((0, 1))


def encode_text_batches(annotator, texts: list[str], batch: int) -> torch.Tensor:
    parts = [annotator.encode_texts(texts[start : start + batch]) for start in range(0, len(texts), batch)]
    return torch.cat(parts) if parts else torch.zeros((0, 1))


def _top(queries: torch.Tensor, targets: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    k = min(k, targets.shape[0])
    scores, rows = [], []
    for start in range(0, queries.shape[0], CHUNK):
        block = queries[start : start + CHUNK] @ targets.T
        values, indices = torch.topk(block, k, dim=1)
        scores.append(values)
        rows.append(indices)
    return torch.cat(scores), torch.cat(rows)


def registered_annotator_load(name: str):
    annotator = MachineAnnotator.objects.get(name=name)
    return load_annotator(
        kind=annotator.kind,
        checkpoint_path=annotator.checkpoint_path,
        config=annotator.config,
        device=resolve_device(getattr(settings, "RANKING_DEVICE", "auto")),
    )


def pool_scores(enlargement: GalleryEnlargement) -> tuple[dict, dict]:
    """(image lists, caption lists): target pk -> [(pool image pk, score), ...] best first."""
    options = ranking_settings()
    targets = list(
        Image.objects.filter(dataset_id=enlargement.dataset_id, gallery_addition__isnull=True)
        .order_by("pk")
        .values_list("pk", "file")
    )
    pool = list(PoolImage.objects.filter(pool_id=enlargement.pool_id).order_by("pk").values_list("pk", "file"))
    target_ids = [pk for pk, _file in targets]
    pool_ids = [pk for pk, _file in pool]
    image_lists: dict[int, list] = {}
    caption_lists: dict[int, list] = {}
    if not targets or not pool:
        return image_lists, caption_lists
    if enlargement.k_image and enlargement.image_annotator:
        annotator = registered_annotator_load(enlargement.image_annotator)
        target_vectors = encode_image_files(annotator, [f for _pk, f in targets], options["image_batch"])
        pool_vectors = encode_image_files(annotator, [f for _pk, f in pool], options["image_batch"])
        if hasattr(annotator, "for_images"):
            both = annotator.for_images(torch.cat([target_vectors, pool_vectors]))
            target_vectors, pool_vectors = both[: len(targets)], both[len(targets) :]
        values, indices = _top(target_vectors.float(), pool_vectors.float(), enlargement.k_image)
        for row, target in enumerate(target_ids):
            image_lists[target] = [
                (pool_ids[int(i)], float(v)) for v, i in zip(values[row].tolist(), indices[row].tolist(), strict=True)
            ]
    if enlargement.k_caption and enlargement.caption_annotator:
        annotator = registered_annotator_load(enlargement.caption_annotator)
        captions = list(
            Caption.objects.filter(dataset_id=enlargement.dataset_id, image_id__in=target_ids)
            .order_by("pk")
            .values_list("image_id", "text")
        )
        pool_vectors = encode_image_files(annotator, [f for _pk, f in pool], options["image_batch"])
        text_vectors = encode_text_batches(annotator, [text for _image, text in captions], options["text_batch"])
        values, indices = _top(text_vectors.float(), pool_vectors.float(), enlargement.k_caption)
        best: dict[int, dict[int, float]] = defaultdict(dict)
        for row, (image_id, _text) in enumerate(captions):
            for v, i in zip(values[row].tolist(), indices[row].tolist(), strict=True):
                pool_id = pool_ids[int(i)]
                best[image_id][pool_id] = max(best[image_id].get(pool_id, -1e9), float(v))
        for target, scores in best.items():
            ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[: enlargement.k_caption]
            caption_lists[target] = ordered
    return image_lists, caption_lists


def enlargement_execute(enlargement_id: int) -> str:
    """Claim, score and record enlargement `enlargement_id`; returns its status afterwards. A duplicate
    task (not queued any more, or locked by another worker) does nothing; a failure is recorded on it."""
    enlargement = enlargement_claim(enlargement_id=enlargement_id)
    if enlargement is not None:
        try:
            image_lists, caption_lists = pool_scores(enlargement)
            enlargement_record(enlargement_id=enlargement_id, image_lists=image_lists, caption_lists=caption_lists)
        except Exception as exc:
            enlargement_fail(enlargement_id=enlargement_id, message=f"{type(exc).__name__}: {exc}")
    return GalleryEnlargement.objects.filter(pk=enlargement_id).values_list("status", flat=True).first() or "missing"
