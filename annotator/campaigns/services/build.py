"""Campaign builds: here and now (the command line, the demo), or queued on Celery (pages and the API),
and adding another annotator's run to a built campaign.

Everything random comes from the campaign's seed, so the same options and runs build the same pairs, HITs,
items and positions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time

from django.db import connection, transaction
from django.utils import timezone

from annotator.analysis.pooling import (
    DIRECTION_KIND,
    sample_queries,
)
from annotator.campaigns.models.campaign import (
    CAMPAIGN_TRANSITIONS,
    Campaign,
    CampaignDirection,
    CampaignStatus,
    Hit,
    HitItem,
    Pair,
    Sampling,
)
from annotator.campaigns.selectors.campaigns import campaign_statistics
from annotator.campaigns.services.extend import campaign_extend
from annotator.campaigns.services.lifecycle import campaign_lock
from annotator.campaigns.services.options import BUILD_FIELDS, check_options, check_runs
from annotator.campaigns.services.pooling import (
    DatasetIndex,
    cxc_query_universe,
    load_query_universe,
    stage_rng,
)
from annotator.campaigns.services.qualification_pool import (
    qualification_pool_halved,
    qualification_pool_keys,
    qualification_pool_plan,
    qualification_pool_withdraw_hit_pairs,
    qualification_pool_write,
)
from annotator.campaigns.services.query_list import listed_queries
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_stalled
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_long_on_commit
from annotator.ranking.models.ranking import RankingRun

logger = logging.getLogger(__name__)

STAGES = {
    CampaignDirection.I2T: ["i2t"],
    CampaignDirection.T2I: ["t2i"],
    CampaignDirection.BOTH: ["i2t", "t2i"],
    CampaignDirection.T2T: ["t2t"],
    CampaignDirection.I2I: ["i2i"],
}


def _fingerprint(campaign: Campaign, run_ids: list[int]) -> str:
    data = {field: getattr(campaign, field) for field in BUILD_FIELDS}
    data["runs"] = sorted(run_ids)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _build_up_to_date(campaign: Campaign, run_ids: list[int]) -> bool:
    return campaign.status == CampaignStatus.BUILT and campaign.build_report.get("fingerprint") == _fingerprint(
        campaign, run_ids
    )


def _lock_unless_building(campaign: Campaign) -> Campaign:
    """The campaign's row lock, without waiting: a build under way holds that lock for as long as it runs, so
    a row that cannot be locked at once is one a worker is building (409)."""
    queryset = Campaign.objects.filter(pk=campaign.pk)
    if connection.features.has_select_for_update_skip_locked:
        queryset = queryset.select_for_update(skip_locked=True)
    locked = queryset.first()
    if locked is None:
        if Campaign.objects.filter(pk=campaign.pk).exists():
            raise ApplicationError("This campaign is being built right now; wait for the build to finish.", status=409)
        raise ApplicationError("No such campaign.", status=404)
    return locked


def _build_check(campaign: Campaign) -> list[int]:
    """What a build can check cheaply before it starts: the state, the runs and the options. Returns the
    run ids. A campaign queued for building is a 409 of its own (the build is under way, not a wrong move),
    unless it stalled (annotator.core.jobs.job_stalled): then it may be queued again. Whether a worker is building
    it right now is known only under the row lock (campaign_build_request takes it)."""
    if campaign.status == CampaignStatus.BUILDING and not job_stalled(campaign):
        raise ApplicationError("This campaign is being built already; wait for the build to finish.", status=409)
    if campaign.status not in (CampaignStatus.BUILT, CampaignStatus.BUILDING):
        check_transition(
            transitions=CAMPAIGN_TRANSITIONS, current=campaign.status, target=CampaignStatus.BUILDING, what="campaign"
        )
    runs = list(campaign.runs.order_by("pk"))
    check_runs(dataset=campaign.dataset, runs=runs)
    check_options(campaign=campaign, runs=runs)
    return [run.pk for run in runs]


def _build_locked(campaign: Campaign, run_ids: list[int]) -> None:
    """Delete the campaign's pairs and HITs and build them again; the campaign becomes `built`. The caller
    holds the campaign's row lock inside a transaction; an ApplicationError rolls everything back."""
    started = time.perf_counter()
    HitItem.objects.filter(hit__campaign=campaign).delete()
    Hit.objects.filter(campaign=campaign).delete()
    Pair.objects.filter(campaign=campaign).delete()

    index = DatasetIndex(campaign.dataset_id)
    stages = []
    listed_reports: dict[str, dict] = {}
    for stage_no, direction in enumerate(STAGES[campaign.direction]):
        if campaign.sampling == Sampling.CXC:
            universe = cxc_query_universe(campaign=campaign, run_ids=run_ids, direction=direction, index=index)
        else:
            universe = load_query_universe(run_ids=run_ids, direction=direction)
        if len(universe) == 0:
            raise ApplicationError(f"The chosen runs have no {direction} candidates for this campaign.")
        sampled, listed_reports[direction] = listed_queries(campaign=campaign, direction=direction, universe=universe)
        if sampled is None:
            sampled = sample_queries(
                universe,
                count=campaign.sample_count,
                fraction=campaign.sample_fraction,
                rng=stage_rng(campaign, 1, stage_no),
            )
        if len(sampled) == 0:
            raise ApplicationError("The query sample is empty: raise the sample count or fraction.")
        order = stage_rng(campaign, 1, stage_no, 1).permutation(sampled)
        stages.append({"direction": direction, "queries": [int(q) for q in order]})
    pool_plan = qualification_pool_plan(campaign=campaign, run_ids=run_ids, stages=stages)
    while True:
        try:
            with transaction.atomic():
                result = campaign_extend(
                    campaign=campaign,
                    stages=stages,
                    pool_run_ids=run_ids,
                    all_run_ids=run_ids,
                    index=index,
                    salt=0,
                    withheld=frozenset(key for key, _role in pool_plan),
                )
            break
        except ApplicationError:
            # A small dataset may not have gold for the HITs and a full pool besides: HIT gold comes first.
            if not pool_plan:
                raise
            pool_plan = qualification_pool_halved(pool_plan)
    pool_size = qualification_pool_write(campaign=campaign, plan=pool_plan, kind=DIRECTION_KIND[stages[0]["direction"]])
    campaign.status = CampaignStatus.BUILT
    campaign.built_at = timezone.now()
    campaign.build_error = ""
    campaign.build_report = {
        "fingerprint": _fingerprint(campaign, run_ids),
        "stages": [
            {
                **stage,
                **counts,
                "query_count": len(stage["queries"]),
                **({"query_list": listed_reports[stage["direction"]]} if listed_reports[stage["direction"]] else {}),
            }
            for stage, counts in zip(stages, result["stages"], strict=True)
        ],
        "added_runs": [],
        "timings": result["timings"],
        "qualification_pool": pool_size,
    }
    campaign.save(update_fields=["status", "built_at", "build_error", "build_report"])
    _refresh_report(campaign, seconds=time.perf_counter() - started)


def campaign_build(*, campaign: Campaign) -> Campaign:
    """Pool the campaign's runs, choose gold, pack HITs, here and now; the campaign becomes `built`.

    For the command line (`manage.py build_campaign`) and the demo; pages and the API queue the build
    with campaign_build_request instead, because a large build outlives an HTTP request. Runs in one
    transaction under SELECT ... FOR UPDATE on the campaign row, so two concurrent builds serialise and
    nobody ever sees it `building`. Idempotent: a built campaign whose build options and runs have not
    changed since is returned untouched; otherwise its pairs and HITs are deleted and built again.
    Reproducible: the same options, runs and seed give the same pairs, HITs, items and positions. `both`
    builds two stages, the image-to-caption HITs first, then the caption-to-image HITs (a pair proposed in
    both directions is asked once, in the first stage, and keeps the provenance of both). Raises
    ApplicationError (the campaign unchanged); refused (409) while building and once launched.
    """
    with transaction.atomic():
        campaign = campaign_lock(campaign)
        run_ids = _build_check(campaign)
        if _build_up_to_date(campaign, run_ids):
            return campaign
        _build_locked(campaign, run_ids)
    return campaign


def campaign_build_request(*, campaign: Campaign) -> Campaign:
    """Queue the build of `campaign` on Celery: draft or built -> building, answered at once.

    Checks what is cheap first (the state, the runs, the options: ApplicationError 400, or 409 for a
    campaign building already or launched), then marks the campaign `building` under SELECT ... FOR UPDATE
    SKIP LOCKED on its row (a build under way holds that lock, and of two requests at once one queues and
    the other gets the 409; neither waits) and enqueues
    `workers.tasks.campaigns.campaign_build_task` after commit. The task builds it (campaign_build_run):
    `built`, or back to `draft` with the reason in build_error. Idempotent for a built campaign whose options
    and runs have not changed: returned unchanged, nothing queued. A build queued more than
    annotator.core.jobs.BUILD_STALE_AFTER ago that no worker holds (its worker died, the task was lost) is
    queued again; a duplicate that arrives late does nothing (campaign_build_run). Returns the campaign as it is
    then (already built, or failed, when Celery runs eagerly outside a request; a request's build goes on
    in the background, annotator.core.queue.enqueue_long_on_commit).
    """
    with transaction.atomic():
        campaign = _lock_unless_building(campaign)
        run_ids = _build_check(campaign)
        if _build_up_to_date(campaign, run_ids):
            return campaign
        campaign.status = CampaignStatus.BUILDING
        campaign.build_error = ""
        campaign.build_requested_at = timezone.now()
        campaign.save(update_fields=["status", "build_error", "build_requested_at"])
    try:
        # After the block: sent now, outside a transaction.
        enqueue_long_on_commit(task_names.CAMPAIGN_BUILD, campaign.pk)
    except Exception as exc:  # a broker that is down
        logger.exception("could not queue the build of campaign %s", campaign.pk)
        _build_failed(campaign_id=campaign.pk, message=f"The build could not be queued: {exc}")
        raise ApplicationError("The build could not be queued; try again in a minute.", status=503) from exc
    campaign.refresh_from_db()
    return campaign


def _build_failed(*, campaign_id: int, message: str) -> None:
    """building -> draft with `message` in build_error (a campaign no longer building is left alone)."""
    Campaign.objects.filter(pk=campaign_id, status=CampaignStatus.BUILDING).update(
        status=CampaignStatus.DRAFT, build_error=message
    )


def campaign_build_run(*, campaign_id: int) -> str:
    """Build the campaign `campaign_id` queued by campaign_build_request; the body of the Celery task.
    Returns the campaign's status afterwards ("missing" when it is gone).

    Takes SELECT ... FOR UPDATE SKIP LOCKED on the campaign row and builds inside that transaction, so a
    duplicated or redelivered task does nothing: it finds the row locked by the build under way, or the
    campaign no longer `building` (built, failed back to draft). Never raises for a failed build: the
    transaction rolls back (pairs and HITs as they were) and the campaign goes back to `draft` with the
    reason in build_error, which the campaign page and the API show.
    """
    try:
        with transaction.atomic():
            campaign = Campaign.objects.select_for_update(skip_locked=True).filter(pk=campaign_id).first()
            if campaign is not None and campaign.status == CampaignStatus.BUILDING:
                runs = list(campaign.runs.order_by("pk"))
                check_runs(dataset=campaign.dataset, runs=runs)  # again: a run may have changed since the request
                check_options(campaign=campaign, runs=runs)
                _build_locked(campaign, [run.pk for run in runs])
    except ApplicationError as error:
        _build_failed(campaign_id=campaign_id, message=error.message)
    except Exception as exc:
        logger.exception("the build of campaign %s failed", campaign_id)
        _build_failed(campaign_id=campaign_id, message=f"The build stopped: {type(exc).__name__}: {exc}")
    return Campaign.objects.filter(pk=campaign_id).values_list("status", flat=True).first() or "missing"


def _refresh_report(campaign: Campaign, *, seconds: float | None = None) -> None:
    stats = campaign_statistics(campaign=campaign, include_progress=False)
    report = dict(campaign.build_report)
    report["statistics"] = stats
    if seconds is not None:
        report["build_seconds"] = round(seconds, 3)
    campaign.build_report = report
    campaign.save(update_fields=["build_report"])


def campaign_add_run(*, campaign: Campaign, run: RankingRun) -> Campaign:
    """Add another annotator's run to a built, live or paused campaign.

    Only pairs not already in the campaign become new pairs; they are packed into new HITs (with gold,
    same composition) appended after the existing ones, over the same sampled queries. Pairs already
    there gain the run's provenance (PairSource). Takes SELECT ... FOR UPDATE on the campaign row.
    Idempotent: adding a run that is already part of the campaign changes nothing.
    """
    started = time.perf_counter()
    with transaction.atomic():
        campaign = campaign_lock(campaign)
        if campaign.status not in (CampaignStatus.BUILT, CampaignStatus.LIVE, CampaignStatus.PAUSED):
            raise ApplicationError(
                f"Runs can be added to a built, live or paused campaign; this one is {campaign.status}.", status=409
            )
        check_runs(dataset=campaign.dataset, runs=[run])
        if campaign.runs.filter(pk=run.pk).exists():
            return campaign
        runs = [*campaign.runs.order_by("pk"), run]
        check_options(campaign=campaign, runs=runs)
        stages = [
            {"direction": stage["direction"], "queries": stage["queries"]}
            for stage in campaign.build_report.get("stages", [])
        ]
        if not stages:
            raise ApplicationError("Build the campaign before adding runs.", status=409)
        campaign.runs.add(run)
        result = campaign_extend(
            campaign=campaign,
            stages=stages,
            pool_run_ids=[run.pk],
            all_run_ids=[r.pk for r in runs],
            index=DatasetIndex(campaign.dataset_id),
            salt=run.pk,
            withheld=frozenset(qualification_pool_keys(campaign=campaign)),
        )
        qualification_pool_withdraw_hit_pairs(campaign=campaign)
        report = dict(campaign.build_report)
        report["fingerprint"] = _fingerprint(campaign, [r.pk for r in runs])
        report["added_runs"] = [*report.get("added_runs", []), {"run": run.pk, **result}]
        campaign.build_report = report
        campaign.save(update_fields=["build_report"])
        _refresh_report(campaign, seconds=time.perf_counter() - started)
    return campaign
