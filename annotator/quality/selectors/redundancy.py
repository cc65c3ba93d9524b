"""Adaptive redundancy, read: which candidate pairs are settled, which still collect answers, and the human
answers the campaign has spent against what a fixed redundancy would have asked for.

`pair_states` is the rule the follow-up planner (annotator.quality.services.followups) packs HITs by;
`campaign_redundancy` is what the requester sees of it on the Quality page. Reads only; no locks.
"""

from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from django.db.models import Count, Q

from annotator.analysis.posterior import settled_probability
from annotator.campaigns.models.campaign import (
    Campaign,
    CampaignStatus,
    Hit,
    HitItem,
    HitStatus,
    ItemRole,
    PairSource,
)
from annotator.crowd.models.crowd import Answer, AssignmentStatus
from annotator.quality.selectors.judging import latest_judge_run
from annotator.quality.selectors.posterior import campaign_posterior

# The fixed redundancy the answers saved are counted against: three answers for every pair, as before
# adaptive redundancy (bench/crowd_quality.py compares the two side by side).
FIXED_REDUNDANCY = 3


def answers_on_the_way(campaign: Campaign) -> dict[int, int]:
    """Per candidate pair: open slots on the open HITs that hold it (reserved leases and unfilled slots),
    plus submitted answers not scored yet."""
    done = Count(
        "assignments",
        filter=Q(assignments__status=AssignmentStatus.APPROVED)
        | Q(assignments__status=AssignmentStatus.SUBMITTED, assignments__scored_at__isnull=False),
    )
    open_slots = {
        hit_id: max(required - answered, 0)
        for hit_id, required, answered in Hit.objects.filter(campaign=campaign, status=HitStatus.OPEN)
        .annotate(answered=done)
        .values_list("pk", "assignments_required", "answered")
    }
    waiting: dict[int, int] = defaultdict(int)
    for hit_id, pair_id in HitItem.objects.filter(
        hit__campaign=campaign, hit_id__in=list(open_slots), role=ItemRole.CANDIDATE
    ).values_list("hit_id", "pair_id"):
        waiting[pair_id] += open_slots[hit_id]
    return waiting


def pair_settled(*, campaign: Campaign, fit, row: int | None, machine: int) -> tuple[int, float, bool]:
    """One pair's (answers, P(positive), settled) in `fit` (row None: no answers yet): the one home of the
    stopping rule. Settled: at least campaign.settle_probability sure of one side, judged with the stopping bar
    the gold check raised (campaign.posterior_inflation, annotator.analysis.posterior.settled_probability),
    with at least campaign.settle_min_answers answers, the machine prior (`machine` = 1) counting as one."""
    answers = int(fit.answers[row]) if row is not None else 0
    if not answers:
        return 0, 0.5, False
    probability = float(fit.probability[row])
    sure = settled_probability(float(fit.log_odds[row]), float(fit.log_odds_var[row]), campaign.posterior_inflation)
    settled = sure >= campaign.settle_probability and answers + machine >= campaign.settle_min_answers
    return answers, probability, settled


def machine_answers(*, campaign: Campaign) -> tuple[int, set[int]]:
    """What the machine prior counts for toward settle_min_answers: (1 with a machine prior, else 0; the pairs it
    does not count for). It counts as one answer except on pairs an annotator ranked first: there the machine and
    careful workers err alike (a first-ranked negative looks like a match to both, ECCV Caption Table B.2), so it
    is no second witness to one human "yes", and those pairs need settle_min_answers human answers."""
    judge_prior = getattr(settings, "QUALITY_POSTERIOR_JUDGE_PRIOR", False) and latest_judge_run(campaign=campaign)
    if not (campaign.machine_prior and (campaign.runs.exists() or judge_prior)):
        return 0, set()
    first = set(PairSource.objects.filter(pair__campaign=campaign, rank=1).values_list("pair_id", flat=True))
    return 1, first


def pair_states(*, campaign: Campaign, fit=None) -> dict[int, dict]:
    """Per candidate pair: answers, P(positive), settled (pair_settled), answers on the way (the working
    posterior)."""
    fit = fit if fit is not None else campaign_posterior(campaign=campaign, approved_only=False)
    row_of = fit.row_of()
    machine, first_ranked = machine_answers(campaign=campaign)
    waiting = answers_on_the_way(campaign)
    states = {}
    candidates = set(
        HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values_list("pair_id", flat=True)
    )
    for pair_id in candidates:
        answers, probability, settled = pair_settled(
            campaign=campaign, fit=fit, row=row_of.get(pair_id), machine=0 if pair_id in first_ranked else machine
        )
        states[pair_id] = {
            "answers": answers,
            "probability": probability,
            "settled": settled,
            "waiting": waiting.get(pair_id, 0),
        }
    return states


def campaign_redundancy(*, campaign: Campaign) -> dict | None:
    """The Quality page's answers-per-pair panel; None before launch or without candidate pairs.

    `answers`: the human answers on candidate pairs not rejected (approved, or submitted and waiting for a
    decision); `fixed_answers`: what FIXED_REDUNDANCY answers for every candidate pair would ask for;
    `saved`: the difference (never below 0) and its share. With adaptive redundancy on, also how many pairs
    are settled, still collecting answers (unsettled, below max_answers_per_pair) and stopped unsettled at
    the cap; while the campaign runs, the saving is the one so far."""
    if campaign.status not in (CampaignStatus.LIVE, CampaignStatus.PAUSED, CampaignStatus.FINISHED):
        return None
    pairs = HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values("pair_id").distinct().count()
    if not pairs:
        return None
    answers = Answer.objects.filter(
        item__hit__campaign=campaign,
        item__role=ItemRole.CANDIDATE,
        assignment__status__in=[AssignmentStatus.APPROVED, AssignmentStatus.SUBMITTED],
    ).count()
    fixed = FIXED_REDUNDANCY * pairs
    saved = max(fixed - answers, 0)
    report = {
        "pairs": pairs,
        "answers": answers,
        "answers_per_pair": answers / pairs,
        "fixed_redundancy": FIXED_REDUNDANCY,
        "fixed_answers": fixed,
        "saved": saved,
        "saved_share": saved / fixed,
        "adaptive": campaign.adaptive_redundancy,
        "settled": None,
        "capped": None,
        "collecting": None,
    }
    if campaign.adaptive_redundancy and answers:
        states = pair_states(campaign=campaign)
        settled = sum(1 for state in states.values() if state["settled"])
        capped = sum(
            1 for state in states.values() if not state["settled"] and state["answers"] >= campaign.max_answers_per_pair
        )
        report |= {"settled": settled, "capped": capped, "collecting": len(states) - settled - capped}
    return report
