"""A campaign's vision-language judge, read: its latest run, its scores on the campaign's pairs and their
calibration on the gold pairs (Platt or isotonic). Reads only; annotator.quality.selectors.judge_prior makes it
the machine prior; its agreement with the crowd's labels is the labels step's
(annotator.labels.selectors.judge_agreement.judge_report), which the Quality page shows."""

from __future__ import annotations

from annotator.analysis.judge import judge_calibration
from annotator.campaigns.models.campaign import Campaign, HitItem, Pair, PairKind
from annotator.quality.selectors.gold_truth import GOLD_TRUTH
from annotator.ranking.models.ranking import AnnotatorKind, Candidate, MachineAnnotator, RankingRun, RunStatus


def latest_judge_run(*, campaign: Campaign) -> RankingRun | None:
    return (
        RankingRun.objects.filter(judges=campaign, status=RunStatus.SUCCEEDED)
        .select_related("annotator")
        .order_by("-finished_at", "-pk")
        .first()
    )


def judge_scores(*, campaign: Campaign, run: RankingRun) -> tuple[dict[int, float], dict]:
    """The judge run's raw score of each of the campaign's image-caption pairs it scored (by pair id), and
    its calibration on the campaign's gold pairs (annotator.analysis.judge.judge_calibration)."""
    score_of = {
        (image, caption): score
        for image, caption, score in Candidate.objects.filter(run=run, direction="i2t").values_list(
            "query_id", "target_id", "score"
        )
    }
    by_pair = {
        pk: score_of[(image, caption)]
        for pk, image, caption in Pair.objects.filter(campaign=campaign, kind=PairKind.IMAGE_CAPTION).values_list(
            "pk", "image_id", "caption_id"
        )
        if (image, caption) in score_of
    }
    gold = dict(
        HitItem.objects.filter(hit__campaign=campaign, role__in=list(GOLD_TRUTH)).values_list("pair_id", "role")
    )
    scored_gold = [(by_pair[p], GOLD_TRUTH[role]) for p, role in gold.items() if p in by_pair]
    calibration = judge_calibration([s for s, _ in scored_gold], [t for _, t in scored_gold])
    return by_pair, calibration


def judges_available():
    """The vision-language judges a requester may start on a campaign (machine annotators of the judge kind)."""
    return list(MachineAnnotator.objects.filter(kind=AnnotatorKind.VLM_JUDGE).order_by("name"))
