"""A simulated crowd for four-choice campaigns whose truth the caller knows (e.g. an enlargement's
verification campaign on the synthetic scenes): careful workers claim, answer and submit through the same
services the browser uses, gold is scored, the review queue is worked through, due work is approved and
the labels are aggregated, as annotator.scenarios.simulation does for the whole rehearsal."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from annotator.models import Assignment, AssignmentStatus, Campaign, Pair
from annotator.scenarios.simulation import CAREFUL, SimWorker, _qualify, _review, _score_pending, _work_one_hit


def four_choice_crowd_work(
    *,
    campaign: Campaign,
    truth_of: Callable[[Pair], bool],
    workers: int = 12,
    accuracy: float = 0.9,
    seed: int = 0,
    max_rounds: int = 200,
) -> dict:
    """Let `workers` careful workers (each right with probability `accuracy`) answer every HIT of a live
    campaign, then score, review (a flagged HIT is kept when 80% of its answers hold up), approve what is
    due and aggregate. Returns the counts of submitted and approved assignments and the aggregation report."""
    from annotator.crowd.services.workers import worker_for_external
    from annotator.labels.services.aggregation import labels_aggregate
    from annotator.quality.services.peers import assignments_auto_approve_due

    crowd = [
        SimWorker(
            worker=worker_for_external(external_id=f"VERIFY{seed}X{campaign.pk}X{n}"),
            kind=CAREFUL,
            rng=random.Random(f"verify-{seed}-{n}"),
            accuracy=accuracy,
        )
        for n in range(workers)
    ]
    now = timezone.now()
    for _round in range(max_rounds):
        progressed = False
        for sim in crowd:
            if not _qualify(sim, campaign=campaign, truth_of=truth_of, now=now):
                continue
            progressed |= _work_one_hit(sim, campaign=campaign, truth_of=truth_of, now=now)
        if not progressed:
            break
    _score_pending(campaign)
    _review(campaign, reviewer=campaign.owner, policy="inspect", truth_of=truth_of)
    assignments_auto_approve_due(now=now + timedelta(hours=campaign.auto_approve_hours) + timedelta(days=30))
    report = labels_aggregate(campaign=campaign)
    statuses = Assignment.objects.filter(hit__campaign=campaign)
    return {
        "submitted": statuses.exclude(status=AssignmentStatus.RESERVED).count(),
        "approved": statuses.filter(status=AssignmentStatus.APPROVED).count(),
        "aggregation": report,
    }
