"""A simulated crowd for similarity (0-5) campaigns: Crisscrossed Captions' STS, SIS and SITS rehearsed.

Each rater has a true similarity for every pair (given by the caller, e.g. from the synthetic scenes'
facts) and answers it with Gaussian noise, on the 0.01 grid the slider uses, the way CxC's raters gave
scores like 2.87. They claim, answer and submit through the same services the browser uses; gold is scored
and due assignments approved like a requester's queue would, so the labels come from approved answers only.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.models import Assignment, AssignmentStatus, Campaign, HitItem, Pair


def similarity_crowd_work(
    *,
    campaign: Campaign,
    true_score: Callable[[Pair], float],
    workers: int = 30,
    noise: float = 0.5,
    seed: int = 0,
    max_rounds: int = 200,
) -> dict:
    """Let `workers` raters answer every HIT of a live similarity campaign, then score and approve.

    Returns how many assignments were submitted, approved and flagged for review.
    """
    from annotator.crowd.selectors.work import hit_item_tokens
    from annotator.crowd.services.answers import assignment_submit
    from annotator.crowd.services.assignments import assignment_claim
    from annotator.crowd.services.workers import worker_for_external
    from annotator.quality.services.peers import assignments_auto_approve_due
    from annotator.quality.services.scoring import assignment_score

    raters = [
        (worker_for_external(external_id=f"SIMRATER{seed}X{campaign.pk}X{n}"), random.Random(f"{seed}-{n}"))
        for n in range(workers)
    ]
    now = timezone.now()
    submitted = 0
    for _round in range(max_rounds):
        progressed = False
        for worker, rng in raters:
            try:
                assignment = assignment_claim(campaign=campaign, worker=worker, now=now)
            except ApplicationError:  # nothing left for this rater (a gold pair they saw sits in every open HIT)
                continue
            tokens = hit_item_tokens(hit=assignment.hit)
            items = HitItem.objects.select_related("pair").in_bulk(list(tokens.values()))
            answers = []
            for token, item_id in tokens.items():
                value = true_score(items[item_id].pair) + rng.gauss(0.0, noise)
                answers.append(
                    {
                        "item_token": token,
                        "score": round(min(max(value, 0.0), 5.0), 2),
                        "seconds_spent": round(rng.uniform(3.0, 9.0), 2),
                    }
                )
            assignment_submit(assignment=assignment, worker=worker, answers=answers, now=now)
            submitted += 1
            progressed = True
        if not progressed:
            break
    for pk in Assignment.objects.filter(
        hit__campaign=campaign, status=AssignmentStatus.SUBMITTED, scored_at__isnull=True
    ).values_list("pk", flat=True):
        assignment_score(assignment_id=pk)
    # Past the auto-approval time and the longest wait for peers: what is not flagged now gets approved.
    later = now + timedelta(hours=campaign.auto_approve_hours) + timedelta(days=30)
    assignments_auto_approve_due(now=later, limit=100_000)
    statuses = Assignment.objects.filter(hit__campaign=campaign)
    return {
        "submitted": submitted,
        "approved": statuses.filter(status=AssignmentStatus.APPROVED).count(),
        "flagged": statuses.filter(status=AssignmentStatus.SUBMITTED).count(),
    }
