"""Judging a campaign's pairs with a vision-language judge: a run over every image-caption pair, candidates and gold."""

from __future__ import annotations

from annotator.core.errors import ApplicationError
from annotator.ranking.models.ranking import (
    AnnotatorKind,
    MachineAnnotator,
)
from annotator.ranking.services.runs import MAX_TOP_K, run_queue


def judge_campaign_start(*, campaign, annotator: MachineAnnotator, created_by=None, in_background: bool = False):
    """Create a run of vision-language judge `annotator` over every image-caption pair of `campaign` (its
    candidates and its gold) and enqueue it on the `gpu` queue after commit: the scores the Quality page
    calibrates against the campaign's gold answers (annotator.labels.selectors.judge_agreement.judge_report).

    Refuses (400) an annotator that is not a vlm_judge, a campaign without image-caption pairs or with more
    than MAX_TOP_K pairs of one image. Locks the annotator row; while a judge run of the same campaign and
    annotator is queued or running, that run is returned. The run's K is the most pairs any image has.
    """
    from django.db.models import Count

    from annotator.campaigns.models.campaign import Pair, PairKind

    if annotator.kind != AnnotatorKind.VLM_JUDGE:
        raise ApplicationError(
            f"Annotator {annotator.name} is a {annotator.kind}; judging a campaign needs a vlm_judge."
        )
    per_image = (
        Pair.objects.filter(campaign=campaign, kind=PairKind.IMAGE_CAPTION)
        .values("image_id")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .values_list("n", flat=True)
        .first()
    )
    if not per_image:
        raise ApplicationError(f"Campaign {campaign.name} has no image-caption pairs to judge; build it first.")
    if per_image > MAX_TOP_K:
        raise ApplicationError(
            f"An image of campaign {campaign.name} has {per_image} pairs; a judge takes {MAX_TOP_K}."
        )
    return run_queue(
        annotator=annotator,
        match={"judges": campaign},
        created_by=created_by,
        in_background=in_background,
        dataset_id=campaign.dataset_id,
        top_k=per_image,
    )
