"""Reads for the sweep and the operations page: work that is late, why, and what the sweep has done.

"Late" is what the sweep (annotator/operations/services/sweep.py) acts on: submissions without a score past
their threshold, imports and builds past their stale time, ranking runs queued too long or silent, exports
queued too long or running too long. The thresholds belong to the services that own each job; they come
in as a StaleTimes (services.operations.sweep.stale_times()). A requester sees their own; staff see all.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Min, Q, QuerySet
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign, CampaignStatus
from annotator.core.jobs import job_kind, job_last_alive
from annotator.core.models.operations import RequeueKind, SweepRequeue, SweepRun
from annotator.core.selectors.access import is_operator
from annotator.crowd.models.crowd import Assignment, AssignmentStatus
from annotator.datasets.models.dataset import Dataset, DatasetStatus
from annotator.labels.models.exports import ExportJob, ExportStatus
from annotator.ranking.models.ranking import RankingRun, RankingShard, RunStatus, ShardStatus

SCORED_STATUSES = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
QUEUE_OF = {"scoring": "default", "import": "default", "build": "default", "export": "default", "ranking": "gpu"}
BEHIND_SECONDS = 300.0


@dataclass(frozen=True)
class StaleTimes:
    score_after: timedelta  # a submission still without a score this long after its submit
    imports: timedelta  # an import without a heartbeat
    builds: timedelta  # a build queued this long ago
    queued_jobs: timedelta  # a ranking run or export queued this long without starting
    running_exports: timedelta  # an export running this long
    silent_runs: timedelta  # a running ranking run without a heartbeat
    silent_shards: timedelta = timedelta(minutes=10)  # a running ranking shard without a committed chunk


def _sees_all(user) -> bool:
    """No user (the sweep, a command) or an operator: every tenant's late work."""
    return user is None or is_operator(user)


def assignments_unscored_overdue(*, stale: StaleTimes, now=None) -> QuerySet[Assignment]:
    """Submitted (or already decided) assignments still without a score past stale.score_after."""
    now = now or timezone.now()
    return Assignment.objects.filter(
        scored_at__isnull=True, submitted_at__isnull=False, submitted_at__lte=now - stale.score_after
    ).filter(status__in=SCORED_STATUSES)


def imports_stalled(*, stale: StaleTimes, now=None) -> QuerySet[Dataset]:
    now = now or timezone.now()
    return Dataset.objects.filter(status=DatasetStatus.IMPORTING, updated_at__lt=now - stale.imports)


def builds_stalled(*, stale: StaleTimes, now=None) -> QuerySet[Campaign]:
    now = now or timezone.now()
    return Campaign.objects.filter(status=CampaignStatus.BUILDING).filter(
        Q(build_requested_at__isnull=True) | Q(build_requested_at__lte=now - stale.builds)
    )


def ranking_runs_late(*, stale: StaleTimes, now=None, queryset=None) -> list[RankingRun]:
    """Runs queued longer than stale.queued_jobs, and running runs silent for stale.silent_runs."""
    now = now or timezone.now()
    queryset = RankingRun.objects.all() if queryset is None else queryset
    candidates = queryset.filter(status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).order_by("pk")
    return [
        run
        for run in candidates
        if (job_last_alive(run) or run.created_at)
        <= now - (stale.queued_jobs if run.status == RunStatus.QUEUED else stale.silent_runs)
    ]


def ranking_shards_late(*, stale: StaleTimes, now=None) -> QuerySet[RankingShard]:
    """Shards of running runs whose message was lost (queued longer than stale.queued_jobs) or whose worker
    went silent (running without a committed chunk for stale.silent_shards)."""
    now = now or timezone.now()
    return (
        RankingShard.objects.filter(run__status=RunStatus.RUNNING)
        .filter(
            Q(status=ShardStatus.QUEUED, queued_at__lte=now - stale.queued_jobs)
            | Q(status=ShardStatus.QUEUED, queued_at__isnull=True)
            | Q(status=ShardStatus.RUNNING, beat_at__lte=now - stale.silent_shards)
        )
        .order_by("pk")
    )


def exports_late(*, stale: StaleTimes, now=None) -> QuerySet[ExportJob]:
    now = now or timezone.now()
    return ExportJob.objects.filter(
        Q(status=ExportStatus.QUEUED, queued_at__isnull=True, created_at__lte=now - stale.queued_jobs)
        | Q(status=ExportStatus.QUEUED, queued_at__lte=now - stale.queued_jobs)
        | Q(status=ExportStatus.RUNNING, started_at__lte=now - stale.running_exports)
    ).order_by("pk")


def requeued_recently(*, kind: str, object_id: int, within: timedelta, now=None) -> bool:
    """Whether the sweep queued this job again less than `within` ago (then it waits in a queue, probably)."""
    now = now or timezone.now()
    return SweepRequeue.objects.filter(kind=kind, object_id=object_id, queued_at__gt=now - within).exists()


def _requeues(kind: str, ids: list[int]) -> dict[int, SweepRequeue]:
    return {mark.object_id: mark for mark in SweepRequeue.objects.filter(kind=kind, object_id__in=ids)}


def late_unscored_by_campaign(*, user, stale: StaleTimes, now=None, campaign=None) -> list[dict]:
    """Per campaign: how many submissions still wait for their score past the threshold, and since when."""
    queryset = assignments_unscored_overdue(stale=stale, now=now)
    if campaign is not None:
        queryset = queryset.filter(hit__campaign=campaign)
    if not _sees_all(user):
        queryset = queryset.filter(hit__campaign__owner=user)
    rows = list(
        queryset.values("hit__campaign_id").annotate(count=Count("id"), oldest=Min("submitted_at")).order_by("oldest")
    )
    names = dict(Campaign.objects.filter(pk__in=[r["hit__campaign_id"] for r in rows]).values_list("pk", "name"))
    return [
        {"campaign_id": r["hit__campaign_id"], "name": names.get(r["hit__campaign_id"], ""), **r, "kind": "scoring"}
        for r in rows
    ]


def _late_rows(requeue_kind: str, jobs: list, what) -> list[dict]:
    marks = _requeues(requeue_kind, [job.pk for job in jobs])
    return [
        {
            "kind": job_kind(job).name,
            "what": what(job),
            "url": job_kind(job).page(job),
            "since": job_last_alive(job),
            "state": job.status,
            "requeue": marks.get(job.pk),
        }
        for job in jobs
    ]


def late_jobs(*, user, stale: StaleTimes, now=None) -> list[dict]:
    """Imports, builds, ranking runs and exports that show no progress for their stale time, oldest first."""
    now = now or timezone.now()
    everyone = _sees_all(user)
    imports = imports_stalled(stale=stale, now=now)
    builds = builds_stalled(stale=stale, now=now)
    runs = RankingRun.objects.select_related("annotator", "dataset")
    runs = runs if everyone else runs.filter(Q(created_by=user) | Q(dataset__owner=user))
    exports = exports_late(stale=stale, now=now).select_related("campaign")
    jobs = [
        *_late_rows(
            RequeueKind.IMPORT,
            list(imports if everyone else imports.filter(owner=user)),
            lambda dataset: f"Import of dataset {dataset.name}",
        ),
        *_late_rows(
            RequeueKind.BUILD,
            list(builds if everyone else builds.filter(owner=user)),
            lambda campaign: f"Build of campaign {campaign.name}",
        ),
        *_late_rows(
            RequeueKind.RANKING,
            ranking_runs_late(stale=stale, now=now, queryset=runs),
            lambda run: f"Ranking run {run.pk}: {run.annotator.name} on {run.dataset.name}",
        ),
        *_late_rows(
            RequeueKind.EXPORT,
            list(exports if everyone else exports.filter(Q(created_by=user) | Q(campaign__owner=user))),
            lambda job: f"Export {job.pk} ({job.format}) of campaign {job.campaign.name}",
        ),
    ]
    return sorted(jobs, key=lambda job: job["since"] or now)


def late_reason(*, kind: str, health, requeue: SweepRequeue | None = None, now=None) -> str:
    """Why a piece of work is late, in words, from the health of the parts it needs."""
    now = now or timezone.now()
    checks = health.checks
    queue = QUEUE_OF[kind]
    if str(checks.get("broker", "ok")).startswith("error"):
        return (
            "The broker (Redis) is unreachable, so nothing can be queued; the work is kept and resumes when it is back."
        )
    if not health.eager and not any(queue in worker["queues"] for worker in health.workers):
        return f"No Celery worker consumes the {queue} queue: start one (docs/operations.md)."
    waiting = health.queues.get(queue, {})
    oldest = waiting.get("oldest_seconds") or 0
    if oldest > BEHIND_SECONDS:
        return (
            f"The workers are behind: {waiting.get('waiting', 0)} tasks wait in the {queue} queue, the oldest for "
            f"{oldest / 60:.0f} min."
        )
    if kind == "scoring":
        if str(checks.get("sweep", "ok")).startswith("ok"):
            return "Its scoring message was lost (a broker restart, a killed worker); the next sweep pass scores it."
        return "Its scoring message was lost and the sweep is not running: check celery beat and the default worker."
    if requeue is not None:
        minutes = (now - requeue.queued_at).total_seconds() / 60
        return (
            f"Its task was lost (a broker restart or a killed worker); the sweep queued it again "
            f"{requeue.times} time{'s' if requeue.times != 1 else ''}, last {minutes:.0f} min ago."
        )
    return "No progress reported for a while; the sweep queues it again on its next pass."


def recent_sweeps(*, limit: int = 10) -> list[SweepRun]:
    return list(SweepRun.objects.order_by("-started_at")[:limit])


def sweep_totals(*, since: timedelta = timedelta(hours=24)) -> dict:
    """What the sweep did over the last day: submissions it scored, leases it released, jobs it queued."""
    runs = SweepRun.objects.filter(started_at__gte=timezone.now() - since)
    totals = {"passes": 0, "scored": 0, "expired": 0, "requeued": 0}
    for scored, expired, requeued in runs.values_list("scored", "expired", "requeued"):
        totals["passes"] += 1
        totals["scored"] += scored
        totals["expired"] += expired
        totals["requeued"] += sum(len(ids) for ids in (requeued or {}).values())
    return totals
