"""A campaign's vision-language judge against the crowd's labels: on the candidate pairs the crowd labelled, the
judge's verdict against the label (agreement, Cohen's kappa), beside its calibration on gold
(annotator.quality.selectors.judging). Reads only; the Quality page shows it (`{% judge_panel campaign %}`,
annotator/templatetags/quality_tags.py)."""

from __future__ import annotations

from annotator.analysis.judge import calibrated_probability, cohen_kappa
from annotator.campaigns.models.campaign import Campaign, HitItem, ItemRole
from annotator.labels.models.labels import Label
from annotator.quality.selectors.judging import judge_scores, latest_judge_run


def judge_report(*, campaign: Campaign) -> dict | None:
    """None without a succeeded judge run of the campaign; else the calibration on the gold pairs the judge
    scored (annotator.analysis.judge.judge_calibration) and, on the candidate pairs the crowd labelled with
    the campaign's label model, the judge's verdict (calibrated P >= 0.5, the raw score without gold of
    both kinds) against the label: agreement and Cohen's kappa."""
    run = latest_judge_run(campaign=campaign)
    if run is None:
        return None
    score_of, calibration = judge_scores(campaign=campaign, run=run)
    candidates = set(
        HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values_list("pair_id", flat=True)
    )
    labelled = [
        (score_of[pair], positive)
        for pair, positive in Label.objects.filter(
            pair__campaign=campaign, method=campaign.label_model, pair_id__in=list(candidates)
        ).values_list("pair_id", "is_positive")
        if pair in score_of
    ]
    scores = [s for s, _ in labelled]
    verdicts = (calibrated_probability(scores, calibration) >= 0.5).tolist() if scores else []
    crowd = [positive for _, positive in labelled]
    agree = sum(v == c for v, c in zip(verdicts, crowd, strict=True))
    return {
        "run": run,
        "scored": len(score_of),
        "calibration": calibration,
        "crowd_pairs": len(labelled),
        "agreement": agree / len(labelled) if labelled else None,
        "kappa": cohen_kappa(verdicts, crowd),
        "label_model": campaign.label_model,
    }
