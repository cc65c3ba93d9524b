"""MSCOCO-FG Fig. 8: is a gallery enlarged with similar images harder than one enlarged with as many random
images from the same pool?

Both galleries hold the dataset's original images. The *similar* one adds the pool images the enlargement
proposed (its targets' most similar, `keep` each); the *random* one adds as many pool images drawn at random
(seeded) from the same pool, as the paper does. Every caption of an original image is a text-to-image query,
scored by one annotator that reads text and sees pixels (a CLIP kind: pool images have no caption for a pivot
annotator to go through), and R@k is the share of queries with a match in the top k. A query's match is its
own image; on the similar side also a pool image the enlargement's verification campaign labelled as
described by the caption (a verified positive is no confuser). A random image is never verified: it counts
as a negative, as the paper's random pools do. The encodings are made once; both galleries are ranked
from them. Reads only.
"""

from __future__ import annotations

import numpy as np
import torch

from annotator.core.errors import ApplicationError
from annotator.finegrained.models.pools import GalleryAddition, GalleryEnlargement
from annotator.finegrained.selectors.pools import enlargement_verified_positives
from annotator.finegrained.services.pools.enlargement import CAPTION_KINDS
from annotator.models import Caption, Image, MachineAnnotator, PoolImage
from workers.ranking.pipeline import ranking_settings
from workers.ranking.pool import encode_image_files, encode_text_batches, registered_annotator_load

KS = (1, 5, 10)


def _recall(texts: torch.Tensor, gallery: torch.Tensor, matches: list[set[int]], ks) -> dict[str, float]:
    """R@k of text-to-image retrieval: a query scores when one of its matches (gallery columns) is in its top k.
    A match's rank is the number of non-matches scoring at least as high (ties count against the query)."""
    scores = texts @ gallery.T
    ranks = []
    for row, columns in enumerate(matches):
        wanted = sorted(columns)
        above = scores[row] >= scores[row, wanted].max()
        above[wanted] = False
        ranks.append(int(above.sum()))
    ranks = np.asarray(ranks)
    return {f"r{k}": float((ranks < k).mean()) for k in ks}


def random_versus_similar(*, enlargement: GalleryEnlargement, annotator: str, seed: int = 0, ks=KS) -> dict:
    """Fig. 8's two bars per k for one annotator: R@k over the gallery enlarged with similar images and over one
    enlarged with as many random pool images. 400 when the annotator cannot rank pool images from text, when the
    enlargement has no proposal yet, or when the pool is smaller than the proposal."""
    kind = MachineAnnotator.objects.filter(name=annotator).values_list("kind", flat=True).first()
    if kind is None:
        raise ApplicationError(f"No machine annotator named {annotator!r}.", status=404)
    if kind not in CAPTION_KINDS:
        raise ApplicationError(
            f"{annotator} ({kind}) cannot rank pool images from a caption; use a kind of {', '.join(CAPTION_KINDS)}."
        )
    similar = sorted({item[0] for items in enlargement.proposal.get("targets", {}).values() for item in items})
    if not similar:
        raise ApplicationError(f"Enlargement {enlargement.pk} has no proposal yet (it is {enlargement.status}).")
    pool = list(PoolImage.objects.filter(pool_id=enlargement.pool_id).order_by("pk").values_list("pk", "file"))
    if len(pool) < len(similar):
        raise ApplicationError(f"The pool has {len(pool)} images, fewer than the {len(similar)} proposed.")
    rng = np.random.default_rng(seed)
    drawn = sorted(int(pool[i][0]) for i in rng.choice(len(pool), size=len(similar), replace=False))

    originals = list(
        Image.objects.filter(dataset_id=enlargement.dataset_id, gallery_addition__isnull=True)
        .order_by("pk")
        .values_list("pk", "file")
    )
    column_of = {pk: n for n, (pk, _file) in enumerate(originals)}
    captions = list(
        Caption.objects.filter(image_id__in=list(column_of)).order_by("pk").values_list("pk", "image_id", "text")
    )
    # A verified positive, (caption, added image), as (caption, pool image).
    pool_of_added = dict(
        GalleryAddition.objects.filter(enlargement=enlargement).values_list("image_id", "pool_image_id")
    )
    verified: dict[int, set[int]] = {}
    for caption, image in enlargement_verified_positives(enlargement=enlargement):
        verified.setdefault(caption, set()).add(pool_of_added[image])

    model = registered_annotator_load(annotator)
    options = ranking_settings()
    file_of = dict(pool)
    needed = sorted(set(similar) | set(drawn))
    pool_vectors = encode_image_files(model, [file_of[pk] for pk in needed], options["image_batch"]).float()
    pool_row = {pk: n for n, pk in enumerate(needed)}
    original_vectors = encode_image_files(model, [f for _pk, f in originals], options["image_batch"]).float()
    text_vectors = encode_text_batches(model, [text for _pk, _image, text in captions], options["text_batch"]).float()

    result = {
        "enlargement": enlargement.pk,
        "annotator": annotator,
        "seed": seed,
        "queries": len(captions),
        "gallery": {"original": len(originals), "added": len(similar)},
        "verified_positives": sum(len(pools) for pools in verified.values()),
    }
    for side, extra in (("similar", similar), ("random", drawn)):
        gallery = torch.cat([original_vectors, pool_vectors[[pool_row[pk] for pk in extra]]])
        extra_column = {pk: len(originals) + n for n, pk in enumerate(extra)}
        matches = [
            {column_of[image]}
            | (
                {extra_column[p] for p in verified.get(caption, ()) if p in extra_column}
                if side == "similar"
                else set()
            )
            for caption, image, _text in captions
        ]
        result[side] = _recall(text_vectors, gallery, matches, ks)
    result["overlap"] = len(set(similar) & set(drawn))
    return result
