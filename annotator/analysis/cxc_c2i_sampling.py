"""Crisscrossed Captions' sampling of image-caption (SITS) pairs from intramodal similarity (numpy, no ORM).

CxC (Sec. 3, "Intermodality") selects its C2I pairs through its intramodal pairs: for an image pair
(i_j, i_k) the caption-image pair (c_k, i_j), c_k a caption of i_k; the same from caption pairs. Half of the
C2I pairs come from the caption-similarity ranks, the other half from the image-similarity ranks, skipping
pairs already chosen. CxC ranked its intramodal pairs by their human ratings; Vericap ranks them by the
runs that rate them before any human does: the image-image ranking of a caption annotator (`minilm_pivot`,
`tfidf_pivot`: images whose captions are similar, CxC's S^C) and of an image annotator (`visual`, `clip`:
images that look alike, S^V). Every such pair is `c2i_intrasim`, CxC's name.

For an `i2t` stage the query is an image i_j and each neighbour image i_k gives one of its captions, drawn with
the seed; for a `t2i` stage the query is a caption c_j, its own image i_j is the pivot, and each neighbour image
i_k is the candidate. Nothing is paired with its own image (the diagonal is zero): a pair is never original.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from annotator.analysis.pooling import CandidateRows

C2I_METHOD = "c2i_intrasim"
# Which annotator kinds give each intramodal similarity, in CxC's order of use (caption ranks first).
CAPTION_SIMILARITY_KINDS = ("minilm_pivot", "tfidf_pivot")
IMAGE_SIMILARITY_KINDS = ("visual", "clip")


def _neighbours(rows: CandidateRows, image: int, depth: int) -> list[tuple[int, int, float]]:
    """(run, neighbour image, score) of `image`'s top `depth` neighbours in `rows`, best first, itself left out."""
    picked = rows.select((rows.query == image) & (rows.target != image))
    order = np.lexsort((picked.run, picked.rank))
    seen, result = set(), []
    for index in order.tolist():
        target = int(picked.target[index])
        if target not in seen and len(result) < depth:
            seen.add(target)
            result.append((int(picked.run[index]), target, float(picked.score[index])))
    return result


def intrasim_neighbours(
    *, caption_rows: CandidateRows, image_rows: CandidateRows, image: int, depth: int
) -> list[tuple[int, int, float]]:
    """`depth` neighbour images of `image`: half (rounded up) from the caption-similarity ranks, the rest from
    the image-similarity ranks, skipping images already chosen; when one side runs short the other fills in."""
    by_caption = _neighbours(caption_rows, image, depth)
    by_image = _neighbours(image_rows, image, depth)
    half = (depth + 1) // 2 if by_image else depth
    chosen = by_caption[:half]
    seen = {target for _run, target, _score in chosen}
    for entry in by_image + by_caption[half:]:
        if len(chosen) >= depth:
            break
        if entry[1] not in seen:
            seen.add(entry[1])
            chosen.append(entry)
    return chosen


def c2i_intrasim_sample(
    *,
    direction: str,
    caption_rows: CandidateRows,
    image_rows: CandidateRows,
    queries: np.ndarray,
    depth: int,
    rng: np.random.Generator,
    captions_of: Mapping[int, list[int]],
    image_of_caption: Mapping[int, int] | None = None,
) -> CandidateRows:
    """Candidate rows of `direction` (i2t or t2i) for `queries`, every one a `c2i_intrasim` pair.

    caption_rows / image_rows: the image-image rows of the caption-similarity and image-similarity runs. For
    i2t, a neighbour image becomes one of its captions (`captions_of`) drawn with `rng`; for t2i each query
    caption's image (`image_of_caption`) is the pivot. Seeded: the same rng state gives the same rows.
    """
    if direction not in ("i2t", "t2i"):
        raise ValueError(f"c2i_intrasim sampling is for i2t and t2i, not {direction!r}")
    image_of_caption = image_of_caption or {}
    out: tuple[list, list, list, list, list] = ([], [], [], [], [])
    for query in np.asarray(queries, dtype=np.int64).tolist():
        pivot = query if direction == "i2t" else image_of_caption.get(query)
        if pivot is None:
            continue
        neighbours = intrasim_neighbours(caption_rows=caption_rows, image_rows=image_rows, image=pivot, depth=depth)
        for rank, (run, neighbour, score) in enumerate(neighbours, start=1):
            if direction == "i2t":
                group = captions_of.get(neighbour, [])
                if not group:
                    continue
                target = int(group[int(rng.integers(len(group)))])
            else:
                target = neighbour
            for column, value in zip(out, (run, query, target, rank, score), strict=True):
                column.append(value)
    return CandidateRows(
        np.asarray(out[0], dtype=np.int64),
        np.asarray(out[1], dtype=np.int64),
        np.asarray(out[2], dtype=np.int64),
        np.asarray(out[3], dtype=np.int64),
        np.asarray(out[4], dtype=np.float64),
    )
