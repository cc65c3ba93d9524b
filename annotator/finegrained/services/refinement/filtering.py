"""What the refinement filter scores, read for the worker task (it takes ids, the services read rows)."""

from __future__ import annotations

from collections import defaultdict

from annotator.datasets.models.dataset import Caption
from annotator.finegrained.models.refinement import Refinement, RefinementProposal, RefinementStatus
from annotator.finegrained.selectors.refinement import caption_texts_current


def refinement_score_inputs(*, refinement_id: int) -> dict | None:
    """The annotator kind, the corpus (every current caption text and every proposal) and, per proposal,
    (original text, proposal text, the other captions of its image). None when the refinement is not
    scoring (a duplicate task)."""
    refinement = Refinement.objects.filter(pk=refinement_id).first()
    if refinement is None or refinement.status != RefinementStatus.SCORING:
        return None
    current = caption_texts_current(dataset=refinement.dataset)
    by_image: dict[int, list[int]] = defaultdict(list)
    image_of = {}
    for pk, image_id in Caption.objects.filter(dataset=refinement.dataset).values_list("pk", "image_id"):
        by_image[image_id].append(pk)
        image_of[pk] = image_id
    proposals = list(RefinementProposal.objects.filter(refinement=refinement).order_by("pk"))
    pairs = [
        (
            p.original_text,
            p.text,
            [current[c] for c in by_image[image_of[p.caption_id]] if c != p.caption_id],
        )
        for p in proposals
    ]
    return {
        "kind": refinement.scorer,
        "ids": [p.pk for p in proposals],
        "pairs": pairs,
        "corpus": list(current.values()) + [p.text for p in proposals],
    }
