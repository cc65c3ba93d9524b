"""A campaign's collusion groups (annotator.analysis.collusion) from its answers and the crowd's posterior.

Every submitted answer counts, rejected ones included: a worker's rejected HIT is still what they answered,
and a colluder whose other HITs were rejected for gold misses must not look independent for want of them.
The workers' sensitivity and specificity are the crowd check's working posterior's (gold answers teach it);
a worker the fit does not know (all their work rejected) gets the widest box, which can only clear them.
Four-answer campaigns only: the similarity scale has no answer sheet of four choices to compare.

Reads only; no locks.
"""

from __future__ import annotations

from django.conf import settings

from annotator.analysis.collusion import AnswerRow, CollusionGroup, WorkerModel, collusion_groups
from annotator.analysis.posterior import PosteriorFit
from annotator.campaigns.models.campaign import Campaign, ItemRole, Scale
from annotator.crowd.models.crowd import Answer, AssignmentStatus
from annotator.crowd.scales import answer_verdict
from annotator.quality.selectors.posterior import campaign_posterior, label_prior


def campaign_collusion(*, campaign: Campaign, fit: PosteriorFit | None = None) -> list[CollusionGroup]:
    """The campaign's collusion groups; `fit` is the crowd check's working posterior when the caller has it."""
    if campaign.scale == Scale.SIMILARITY:
        return []
    if fit is None:
        fit = campaign_posterior(campaign=campaign, approved_only=False, prior=label_prior(check=True))
    worker_row = {int(worker): row for row, worker in enumerate(fit.workers)}
    weight_yes, weight_no = fit.weights()
    rows = []
    for worker_id, hit_id, position, pair_id, role, choice, status in (
        Answer.objects.filter(item__hit__campaign=campaign, assignment__submitted_at__isnull=False)
        .exclude(choice="")
        .values_list(
            "assignment__worker_id",
            "item__hit_id",
            "item__position",
            "item__pair_id",
            "item__role",
            "choice",
            "assignment__status",
        )
    ):
        row = worker_row.get(worker_id)
        in_fit = row is not None and status != AssignmentStatus.REJECTED  # the fit reads scored, unrejected work
        said = answer_verdict(campaign=campaign, choice=choice, score=None)
        weight = (float(weight_yes[row]) if said else float(weight_no[row])) if in_fit else 0.0
        rows.append(
            AnswerRow(
                worker=worker_id,
                hit=hit_id,
                position=position,
                pair=pair_id,
                choice=choice,
                weight=weight,
                gold=role != ItemRole.CANDIDATE,
            )
        )
    models = {
        int(worker): WorkerModel(sens=tuple(map(float, fit.sens[row])), spec=tuple(map(float, fit.spec[row])))
        for row, worker in enumerate(fit.workers)
    }
    log_odds = {int(pair): float(value) for pair, value in zip(fit.pairs, fit.log_odds, strict=True)}
    return collusion_groups(
        answers=rows,
        log_odds=log_odds,
        workers=models,
        level=float(getattr(settings, "QUALITY_COLLUSION_LEVEL", 1e-3)),
        min_compared=int(getattr(settings, "QUALITY_COLLUSION_MIN_COMPARED", 10)),
    )


def collusion_group_of(groups: list[CollusionGroup]) -> dict[int, CollusionGroup]:
    """Each flagged worker's group."""
    return {worker: group for group in groups for worker in group.workers}


TEST_LABELS = {
    "position": "the same answers at the same HIT positions, on different pairs",
    "shared_items": "the same answers to the pairs both answered",
}


def campaign_collusion_review(*, campaign: Campaign) -> list[dict]:
    """The collusion groups as the review queue shows them: the members (Worker rows) and, per flagged couple,
    the test, identical answers out of those compared, the most independent workers would give on average,
    the p-value, and the HITs (by index) and pairs compared."""
    from annotator.campaigns.models.campaign import Hit
    from annotator.crowd.models.crowd import Worker

    groups = campaign_collusion(campaign=campaign)
    workers = Worker.objects.in_bulk([worker for group in groups for worker in group.workers])
    hit_ids = {hit for group in groups for evidence in group.evidence for hit in evidence.hits}
    index_of = dict(Hit.objects.filter(pk__in=hit_ids).values_list("pk", "index"))
    return [
        {
            "workers": [workers[worker] for worker in group.workers if worker in workers],
            "evidence": [
                {
                    "couple": [workers.get(worker) for worker in evidence.workers],
                    "test": TEST_LABELS[evidence.test],
                    "matched": evidence.matched,
                    "compared": evidence.compared,
                    "expected": evidence.expected,
                    "p_value": evidence.p_value,
                    "hits": sorted(index_of[hit] for hit in evidence.hits if hit in index_of),
                    "pairs": list(evidence.pairs),
                }
                for evidence in group.evidence
            ],
        }
        for group in groups
    ]
