"""Reads for requesters' campaign pages: their campaigns, pre-launch statistics, progress."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, QuerySet

from annotator.analysis.pooling import overlap_matrix
from annotator.campaigns.models.campaign import (
    Campaign,
    CampaignStatus,
    Hit,
    HitItem,
    ItemRole,
    Pair,
    PairSource,
)
from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.campaigns.selectors.crowd_work import campaign_progress
from annotator.core.errors import ApplicationError
from annotator.ranking.models.ranking import RankingRun, RunStatus


def campaign_list_managed(*, user) -> QuerySet[Campaign]:
    """The campaigns `user` manages (annotator.campaigns.selectors.access.campaigns_managed_by), newest first, with
    HIT counts."""
    return (
        campaigns_managed_by(user)
        .select_related("dataset")
        .annotate(hit_count=Count("hits", distinct=True))
        .order_by("-created_at", "-id")
    )


def campaign_get_managed(*, user, campaign_id: int) -> Campaign:
    """The campaign if `user` manages it; a 404 ApplicationError otherwise."""
    campaign = campaign_list_managed(user=user).filter(pk=campaign_id).first()
    if campaign is None:
        raise ApplicationError("No such campaign.", status=404)
    return campaign


def runs_available(*, dataset=None) -> QuerySet[RankingRun]:
    """Succeeded ranking runs that can be pooled into a campaign."""
    runs = RankingRun.objects.filter(status=RunStatus.SUCCEEDED).select_related("annotator", "dataset")
    if dataset is not None:
        runs = runs.filter(dataset=dataset)
    return runs.order_by("dataset__name", "annotator__name", "-created_at")


def campaign_cost(*, campaign: Campaign, hits: int) -> dict:
    """reward x HITs x redundancy, plus the platform fee on top (amounts in cents)."""
    rewards = campaign.reward_cents * hits * campaign.redundancy
    fee = rewards * campaign.platform_fee_percent / 100.0
    return {
        "reward_cents": campaign.reward_cents,
        "rewards_cents": rewards,
        "fee_percent": campaign.platform_fee_percent,
        "fee_cents": round(fee, 2),
        "total_cents": round(rewards + fee, 2),
    }


def campaign_duration_estimate(*, campaign: Campaign, hits: int) -> dict:
    """Worker time and wall-clock time to finish, from settings CAMPAIGN_SECONDS_PER_ITEM (a worker's
    seconds per item) and CAMPAIGN_ACTIVE_WORKERS (workers busy at the same time on average)."""
    seconds_per_item = float(getattr(settings, "CAMPAIGN_SECONDS_PER_ITEM", 20.0))
    workers = max(1, int(getattr(settings, "CAMPAIGN_ACTIVE_WORKERS", 10)))
    work_seconds = hits * campaign.redundancy * campaign.hit_size * seconds_per_item
    return {
        "seconds_per_item": seconds_per_item,
        "active_workers": workers,
        "minutes_per_hit": round(campaign.hit_size * seconds_per_item / 60.0, 2),
        "worker_hours": round(work_seconds / 3600.0, 2),
        "hours": round(work_seconds / workers / 3600.0, 2),
    }


def campaign_statistics(*, campaign: Campaign, include_progress: bool = True) -> dict:
    """Everything the campaign page shows before launch (and progress once live).

    proposals: candidate rows pooled (every run's top k per sampled query, before duplicates are removed);
    unique_pairs: pairs with at least one proposal; gold_pairs: pairs no annotator proposed that some HIT
    asks as a gold item (a pair without a HIT item is nobody's gold); overlap: per pair
    of runs, pairs proposed by both and by either; hits (and per stage); cost; estimated duration.
    """
    report = campaign.build_report or {}
    proposals = sum(stage.get("proposals", 0) for stage in report.get("stages", []))
    proposals += sum(stage.get("proposals", 0) for added in report.get("added_runs", []) for stage in added["stages"])
    sources = list(PairSource.objects.filter(pair__campaign=campaign).values_list("pair_id", "run_id"))
    unique_pairs = len({pair_id for pair_id, _run in sources})
    matrix = overlap_matrix([p for p, _ in sources], [r for _, r in sources])
    names = dict(RankingRun.objects.filter(pk__in=matrix["runs"]).values_list("pk", "annotator__name"))
    matrix["names"] = [f"{names.get(run, '?')} (run {run})" for run in matrix["runs"]]
    hits_by_stage = dict(
        Hit.objects.filter(campaign=campaign).values_list("stage").annotate(n=Count("pk")).values_list("stage", "n")
    )
    hits = sum(hits_by_stage.values())
    roles = dict(
        HitItem.objects.filter(hit__campaign=campaign)
        .values_list("role")
        .annotate(n=Count("pk"))
        .values_list("role", "n")
    )
    pairs = Pair.objects.filter(campaign=campaign).count()
    gold_pairs = (
        Pair.objects.filter(
            campaign=campaign,
            sources__isnull=True,
            hit_items__role__in=[ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE],
        )
        .distinct()
        .count()
    )
    stats = {
        "proposals": proposals,
        "unique_pairs": unique_pairs,
        "pairs": pairs,
        "gold_pairs": gold_pairs,
        "original_pairs_pooled": Pair.objects.filter(campaign=campaign, is_original=True, sources__isnull=False)
        .distinct()
        .count(),
        "overlap": matrix,
        "hits": hits,
        "hits_by_stage": hits_by_stage,
        "gold_light_hits": Hit.objects.filter(campaign=campaign, gold_light=True).count(),  # adaptive gold
        "hit_size": campaign.hit_size,
        "composition": {
            "candidates": campaign.candidates_per_hit,
            "gold_positives": campaign.gold_positives_per_hit,
            "gold_negatives": campaign.gold_negatives_per_hit,
        },
        "items_by_role": {role: roles.get(role, 0) for role in ItemRole.values if role != ItemRole.QUALIFICATION},
        "queries": {stage["direction"]: stage.get("query_count", 0) for stage in report.get("stages", [])},
        "cost": campaign_cost(campaign=campaign, hits=hits),
        "duration": campaign_duration_estimate(campaign=campaign, hits=hits),
    }
    if include_progress:
        stats["progress"] = campaign_progress(campaign=campaign)
    return stats


def campaign_overview(*, campaign: Campaign) -> dict | None:
    """What the campaign page shows: the statistics kept in build_report at the last build or added run
    (recomputed only if missing; reading every PairSource on each page view would be slow at ECCV sizes)
    and the live progress. None for a draft, and while it is building (the last build's numbers are
    about to be replaced)."""
    if campaign.status in (CampaignStatus.DRAFT, CampaignStatus.BUILDING):
        return None
    stats = dict(
        campaign.build_report.get("statistics") or campaign_statistics(campaign=campaign, include_progress=False)
    )
    stats["progress"] = campaign_progress(campaign=campaign)
    return stats
