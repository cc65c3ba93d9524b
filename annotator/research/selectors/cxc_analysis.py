"""A similarity campaign's ratings as Crisscrossed Captions analyses them: per-pair spread, and each ranking
run's agreement with the people (Spearman's r with CxC's bootstrap), for the campaign's task."""

from __future__ import annotations

from collections import defaultdict

from annotator.analysis.cxc_analysis import bootstrap_spearman, rating_spread
from annotator.campaigns.models.campaign import Campaign, ItemRole, PairSource, Scale
from annotator.crowd.models.crowd import Answer, AssignmentStatus
from annotator.labels.models.labels import Label

TASKS = {"t2t": "STS", "i2i": "SIS", "i2t": "SITS", "t2i": "SITS", "both": "SITS"}


def campaign_cxc_analysis(*, campaign: Campaign, method: str = "mean", samples: int = 1000) -> dict:
    """Spread of the approved ratings of the campaign's candidate pairs, and per run the bootstrap Spearman's r
    between its scores and the pairs' `method` labels (pairs a run did not score are left out of its r)."""
    if campaign.scale != Scale.SIMILARITY:
        return {"task": None, "spread": None, "runs": []}
    ratings: dict[int, list[float]] = defaultdict(list)
    for pair_id, score in Answer.objects.filter(
        item__hit__campaign=campaign,
        item__role=ItemRole.CANDIDATE,
        assignment__status=AssignmentStatus.APPROVED,
        score__isnull=False,
    ).values_list("item__pair_id", "score"):
        ratings[pair_id].append(score)
    human = dict(
        Label.objects.filter(pair__campaign=campaign, method=method, score__isnull=False).values_list(
            "pair_id", "score"
        )
    )
    runs = []
    by_run: dict[int, list] = defaultdict(list)
    names = {}
    for run_id, name, pair_id, query_id, score in PairSource.objects.filter(pair__campaign=campaign).values_list(
        "run_id", "run__annotator__name", "pair_id", "pair__query_id", "score"
    ):
        names[run_id] = name
        if pair_id in human:
            by_run[run_id].append((query_id, human[pair_id], score))
    for run_id in sorted(by_run):
        runs.append({"run": run_id, "annotator": names[run_id], **bootstrap_spearman(by_run[run_id], samples=samples)})
    return {"task": TASKS.get(campaign.direction), "spread": rating_spread(ratings), "runs": runs}
