"""Gold items of a build: pair keys, the dataset's original pairs, the positives to try first per query.
Choosing them (reuse limits, negatives outside every annotator's top) is `annotator.analysis.packing.GoldPicker`.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from annotator.analysis.pooling import DIRECTION_KIND, encode_keys, key_function
from annotator.campaigns.models.campaign import PairKind
from annotator.campaigns.services.pooling import DatasetIndex


def originals(*, direction: str, index: DatasetIndex) -> np.ndarray:
    """Keys of the dataset's original pairs of this direction's kind (co-captions for caption-caption)."""
    kind = DIRECTION_KIND[direction]
    if kind == PairKind.IMAGE_CAPTION:
        return np.unique(encode_keys(index.caption_image, index.caption_ids))
    if kind == PairKind.CAPTION_CAPTION:
        keys = [
            (a << 32) | b for captions in index.captions_of_image.values() for a, b in combinations(sorted(captions), 2)
        ]
        return np.unique(np.array(keys, dtype=np.int64))
    return np.empty(0, dtype=np.int64)


def positives_by_query(*, direction: str, queries: np.ndarray, index: DatasetIndex, rng) -> dict[int, list[int]]:
    """Original pairs to try first as gold positives for each query (shuffled with the seed)."""
    make_key = key_function(direction)
    result: dict[int, list[int]] = {}
    if direction == "i2i":
        return result
    images = index.image_of(queries) if direction in ("t2i", "t2t") else queries
    for query, image in zip(queries.tolist(), np.asarray(images).tolist(), strict=True):
        if direction == "i2t":
            keys = [make_key(query, c) for c in index.captions_of_image.get(query, [])]
        elif direction == "t2i":
            own = make_key(query, image)
            others = [(image << 32) | c for c in index.captions_of_image.get(image, []) if c != query]
            keys = [own] + [others[i] for i in rng.permutation(len(others))]
            result[query] = keys
            continue
        else:  # t2t: co-captions
            keys = [make_key(query, c) for c in index.captions_of_image.get(image, []) if c != query]
        result[query] = [keys[i] for i in rng.permutation(len(keys))]
    return result
