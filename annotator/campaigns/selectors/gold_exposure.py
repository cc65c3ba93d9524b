"""Reads about gold exposure and the qualification pool, for the requester's campaign page, the API and
simulate_crowd. Never for a worker."""

from collections import defaultdict

from annotator.analysis.gold import qualification_pool_warning
from annotator.analysis.gold_exposure import per_worker_exposure
from annotator.campaigns.models.campaign import (
    QUALIFICATION_SHARE_MAX,
    QUALIFICATION_SHARE_MIN,
    Campaign,
    HitItem,
    ItemRole,
)
from annotator.campaigns.models.gold import GoldRetirement, QualificationItem, QualificationRole
from annotator.campaigns.selectors.crowd_work import hit_leases

GOLD_ROLES = [ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE]


def gold_views(*, campaign: Campaign, pair_ids=None) -> list[tuple[int, int, int, int]]:
    """(worker id, gold pair id, hit id, assignment id) for every assignment (any status: a lease shows the
    items) on a HIT holding that gold pair, oldest lease first."""
    items = HitItem.objects.filter(hit__campaign=campaign, role__in=GOLD_ROLES)
    if pair_ids is not None:
        items = items.filter(pair_id__in=list(pair_ids))
    pairs_of_hit: dict[int, list[int]] = defaultdict(list)
    for hit_id, pair_id in items.values_list("hit_id", "pair_id"):
        pairs_of_hit[hit_id].append(pair_id)
    views = []
    for worker_id, hit_id, assignment_id in hit_leases(hit_ids=list(pairs_of_hit)):
        for pair_id in pairs_of_hit[hit_id]:
            views.append((worker_id, pair_id, hit_id, assignment_id))
    return views


def gold_exposure_summary(*, campaign: Campaign) -> dict:
    """Per-pair and per-worker gold exposure, and the retired pairs, for the campaign page."""
    items = list(HitItem.objects.filter(hit__campaign=campaign, role__in=GOLD_ROLES).values_list("pair_id", "hit_id"))
    hits_of_pair: dict[int, set[int]] = defaultdict(set)
    for pair_id, hit_id in items:
        hits_of_pair[pair_id].add(hit_id)
    views = gold_views(campaign=campaign)
    workers_of_pair: dict[int, set[int]] = defaultdict(set)
    for worker_id, pair_id, _hit, _assignment in views:
        workers_of_pair[pair_id].add(worker_id)
    exposure = sorted((len(workers_of_pair.get(pair_id, ())) for pair_id in hits_of_pair), reverse=True)
    per_worker = per_worker_exposure([(w, p) for w, p, _h, _a in views])
    worker_pairs = sorted((row["gold_pairs"] for row in per_worker.values()), reverse=True)
    return {
        "gold_pairs": len(hits_of_pair),
        "max_hits_per_pair": max((len(h) for h in hits_of_pair.values()), default=0),
        "max_workers_per_pair": exposure[0] if exposure else 0,
        "median_workers_per_pair": exposure[len(exposure) // 2] if exposure else 0,
        "cap": campaign.gold_max_exposure,
        "workers": len(per_worker),
        "max_gold_pairs_per_worker": worker_pairs[0] if worker_pairs else 0,
        "max_views_of_one_pair_by_one_worker": max((r["most_views_of_one"] for r in per_worker.values()), default=0),
        "retired": list(
            GoldRetirement.objects.filter(campaign=campaign).values(
                "pair_id", "role", "reason", "exposure", "replaced_in", "created_at"
            )[:50]
        ),
        "retired_count": GoldRetirement.objects.filter(campaign=campaign).count(),
    }


def gold_exposure_per_worker(*, campaign: Campaign) -> dict[int, dict]:
    """worker id -> distinct gold pairs seen, views, most views of one pair (1 when no pair was repeated)."""
    return per_worker_exposure([(w, p) for w, p, _h, _a in gold_views(campaign=campaign)])


def qualification_pool_summary(*, campaign: Campaign) -> dict:
    """For the requester: the pool's size by role, how often its items were shown, how many were withdrawn,
    and a warning ("" when none) when the pool is one-sided, unbalanced or too small for the tests."""
    items = list(QualificationItem.objects.filter(campaign=campaign).values("role", "times_shown", "withdrawn"))
    active = [item for item in items if not item["withdrawn"]]
    shown = sorted(item["times_shown"] for item in active)
    positives = sum(1 for item in active if item["role"] == QualificationRole.GOLD_POSITIVE)
    negatives = len(active) - positives
    return {
        "size": len(active),
        "positives": positives,
        "negatives": negatives,
        "warning": qualification_pool_warning(
            positives=positives,
            negatives=negatives,
            test_items=campaign.qualification_items,
            min_share=QUALIFICATION_SHARE_MIN,
            max_share=QUALIFICATION_SHARE_MAX,
        ),
        "withdrawn": len(items) - len(active),
        "never_shown": sum(1 for n in shown if n == 0),
        "max_shown": shown[-1] if shown else 0,
        "median_shown": shown[len(shown) // 2] if shown else 0,
        "total_shown": sum(shown),
    }
