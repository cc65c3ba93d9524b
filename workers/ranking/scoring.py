"""Score (caption text, image) pairs with a machine annotator, for the refinement filter: keep a proposed
finer caption only when its own image scores it higher than the original (MSCOCO-FG Sec. 3.2.3).

Pivot annotators see an image through its captions; the caption being refined never pivots for itself
(the same rule as workers/ranking/topk.py's SelfPivot), so the original does not win by matching itself.
"""

from __future__ import annotations

import torch

from workers.ranking.annotators import load_annotator


def _dense(matrix) -> torch.Tensor:
    if hasattr(matrix, "toarray"):
        return torch.from_numpy(matrix.toarray())
    return matrix


def pivot_pair_scores(*, kind: str, pairs: list[tuple[str, str, list[str]]], corpus: list[str]) -> list[tuple]:
    """For each (original, proposal, pivot captions) the cosine of the original and of the proposal with
    the image represented by its pivot captions; (0.0, 0.0) when the image has no other caption."""
    annotator = load_annotator(kind=kind).for_corpus(list(corpus))
    scores: list[tuple] = []
    with_pivot = [index for index, (_, _, pivots) in enumerate(pairs) if pivots]
    if with_pivot:
        images = _dense(annotator.encode_images([pairs[i][2] for i in with_pivot]))
        originals = _dense(annotator.encode_texts([pairs[i][0] for i in with_pivot]))
        proposals = _dense(annotator.encode_texts([pairs[i][1] for i in with_pivot]))
        original_scores = (originals * images).sum(dim=1).tolist()
        proposal_scores = (proposals * images).sum(dim=1).tolist()
    found = {index: (original_scores[n], proposal_scores[n]) for n, index in enumerate(with_pivot)}
    for index in range(len(pairs)):
        scores.append(found.get(index, (0.0, 0.0)))
    return scores
