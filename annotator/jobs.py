"""One lifecycle for the kinds of background job: dataset imports, ranking runs, campaign builds, exports,
pool imports and gallery enlargements.

Every job is queued, then running (with progress), then done or failed; a failed job can be retried, which
queues it again. A queued or running job that has shown no sign of life for its kind's stale time is
stalled (its worker died, or its Celery message was lost) and can be retried like a failed one.

Each kind keeps its own status column and values: they sit in database constraints, the API and the
transition tables of annotator/models. What is shared lives here: how a kind's status reads as a lifecycle
state (`job_state`), when it last showed life (`job_last_alive`), whether it stalled (`job_stalled`), its
progress (`job_view`, what the progress widget and its JSON show), the locked status move
(`job_move`), and the retry (`job_retry`, which calls the kind's own retry service).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone
from django.utils.module_loading import import_string

from annotator.models.campaign import CAMPAIGN_TRANSITIONS, Campaign, CampaignStatus
from annotator.models.dataset import DATASET_TRANSITIONS, Dataset, DatasetStatus
from annotator.models.pools import (
    ENLARGEMENT_TRANSITIONS,
    POOL_TRANSITIONS,
    EnlargementStatus,
    GalleryEnlargement,
    ImagePool,
    PoolStatus,
)
from annotator.models.ranking import RUN_TRANSITIONS, RankingRun, RankingShard, RunStatus
from annotator.models.refinement import REFINEMENT_TRANSITIONS, Refinement, RefinementStatus
from annotator.models.research import EXPORT_TRANSITIONS, ExportJob, ExportStatus
from annotator.models.state import check_transition
from annotator.queue import enqueue_long_on_commit


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    STALLED = "stalled", "Stalled"


ACTIVE_STATES = (JobState.QUEUED, JobState.RUNNING)

# A running import writes progress at least every batch of 500 images or 2,000 captions.
IMPORT_STALE_AFTER = timedelta(minutes=10)
# A running ranking run commits a unit (an embedding shard, a top-K chunk) every few minutes at most.
RUN_STALE_AFTER = timedelta(minutes=30)
# A build holds its campaign's row lock while it runs and writes nothing before it ends; a queued build
# still `building` this long after its request was lost.
BUILD_STALE_AFTER = timedelta(minutes=10)
# An export of a million labels takes about a minute (docs/research.md).
EXPORT_STALE_AFTER = timedelta(minutes=30)


def queued_stale_after() -> timedelta:
    """How long a ranking run or an export may wait in its queue before the wait counts as a lost message."""
    return timedelta(seconds=getattr(settings, "SWEEP_JOB_STALE_SECONDS", 600.0))


def shard_stale_after() -> timedelta:
    """How long a running ranking shard may go without committing a chunk before another worker takes it."""
    return timedelta(seconds=getattr(settings, "RANKING_SHARD_STALE_SECONDS", 600.0))


def _epoch(seconds) -> datetime | None:
    return datetime.fromtimestamp(float(seconds), tz=timezone.get_current_timezone()) if seconds else None


def _latest(*moments: datetime | None) -> datetime | None:
    known = [moment for moment in moments if moment is not None]
    return max(known) if known else None


class JobKind:
    """How one kind of job reads as the shared lifecycle. A kind names itself (in URLs and JSON), its model
    and status transitions, and its retry service (a dotted path, called with the job as `retry_keyword`)."""

    name: str
    label: str
    model: type[models.Model]
    transitions: dict
    retry: tuple[str, str]  # (dotted path of the service, its keyword for the job)

    # The statuses ranking runs and exports share; a kind with others reads them itself.
    STATES = {
        "queued": JobState.QUEUED,
        "running": JobState.RUNNING,
        "succeeded": JobState.DONE,
        "failed": JobState.FAILED,
        "cancelled": JobState.FAILED,
    }

    def state(self, job) -> JobState | None:
        """The lifecycle state of the kind's own status; None when the object is not a job right now."""
        return self.STATES.get(job.status)

    def last_alive(self, job) -> datetime | None:
        raise NotImplementedError

    def stale_after(self, state: JobState) -> timedelta:
        raise NotImplementedError

    def progress(self, job) -> tuple[int, int, str]:
        """Done, total, and what is counted."""
        raise NotImplementedError

    def error(self, job) -> str:
        return job.error

    def page(self, job) -> str:
        raise NotImplementedError


class ImportKind(JobKind):
    name, label, model, transitions = "import", "Import", Dataset, DATASET_TRANSITIONS
    retry = ("annotator.services.importing.uploads.dataset_import_retry", "dataset")

    def state(self, dataset):
        if dataset.status == DatasetStatus.IMPORTING:
            return JobState.QUEUED if (dataset.report or {}).get("phase") == "queued" else JobState.RUNNING
        return JobState.FAILED if dataset.status == DatasetStatus.FAILED else JobState.DONE

    def last_alive(self, dataset):
        return dataset.updated_at  # every progress write moves it

    def stale_after(self, state):
        return IMPORT_STALE_AFTER

    def progress(self, dataset):
        total = dataset.images_total + dataset.captions_total
        done = min(dataset.images_done, dataset.images_total) + min(dataset.captions_done, dataset.captions_total)
        return done, total, "images and captions"

    def error(self, dataset):
        if dataset.status != DatasetStatus.FAILED:
            return ""
        return "; ".join(str(error) for error in ((dataset.report or {}).get("errors") or [])[:3])

    def page(self, dataset):
        return reverse("dataset-detail", args=[dataset.pk])


class RankingKind(JobKind):
    name, label, model, transitions = "ranking", "Ranking run", RankingRun, RUN_TRANSITIONS
    retry = ("annotator.services.ranking.runs.ranking_run_retry", "run")

    def last_alive(self, run):
        """A queued run: when it was queued. A running one: the heartbeat the coordinator writes into
        `progress`, its resume, its start, or the latest chunk any of its shards committed."""
        if run.status == RunStatus.QUEUED:
            return run.queued_at or run.created_at
        progress = run.progress or {}
        shard_beat = RankingShard.objects.filter(run_id=run.pk).aggregate(latest=Max("beat_at"))["latest"]
        alive = _latest(_epoch(progress.get("beat_at")), _epoch(progress.get("resumed_at")), run.started_at, shard_beat)
        return alive or run.created_at

    def stale_after(self, state):
        return queued_stale_after() if state == JobState.QUEUED else RUN_STALE_AFTER

    def progress(self, run):
        return run.chunks_done, run.chunks_total, "chunks"

    def page(self, run):
        return reverse("ranking-run", args=[run.pk])


class BuildKind(JobKind):
    """A build runs in one transaction under its campaign's row lock: until it ends it reads as queued, and
    nothing of it is visible before it is all there."""

    name, label, model, transitions = "build", "Build", Campaign, CAMPAIGN_TRANSITIONS
    retry = ("annotator.services.campaigns.build.campaign_build_request", "campaign")

    def state(self, campaign):
        if campaign.status == CampaignStatus.BUILDING:
            return JobState.QUEUED
        if campaign.status == CampaignStatus.DRAFT:
            return JobState.FAILED if campaign.build_error else None
        return JobState.DONE if campaign.built_at else None

    def last_alive(self, campaign):
        return campaign.build_requested_at

    def stale_after(self, state):
        return BUILD_STALE_AFTER

    def progress(self, campaign):
        return int(self.state(campaign) == JobState.DONE), 1, "build"

    def error(self, campaign):
        return campaign.build_error

    def page(self, campaign):
        return reverse("campaign-detail", args=[campaign.pk])


class ExportKind(JobKind):
    name, label, model, transitions = "export", "Export", ExportJob, EXPORT_TRANSITIONS
    retry = ("annotator.services.exports.jobs.export_retry", "job")

    def last_alive(self, job):
        return job.started_at if job.status == ExportStatus.RUNNING else job.queued_at or job.created_at

    def stale_after(self, state):
        return queued_stale_after() if state == JobState.QUEUED else EXPORT_STALE_AFTER

    def progress(self, job):
        return job.rows, job.rows, "rows"

    def page(self, job):
        return reverse("research-campaign", args=[job.campaign_id])


class PoolImportKind(JobKind):
    name, label, model, transitions = "pool", "Pool import", ImagePool, POOL_TRANSITIONS
    retry = ("annotator.services.pools.imports.pool_import_retry", "pool")

    def state(self, pool):
        if pool.status == PoolStatus.IMPORTING:
            return JobState.QUEUED if (pool.report or {}).get("phase") == "queued" else JobState.RUNNING
        return JobState.FAILED if pool.status == PoolStatus.FAILED else JobState.DONE

    def last_alive(self, pool):
        return pool.updated_at

    def stale_after(self, state):
        return IMPORT_STALE_AFTER

    def progress(self, pool):
        return pool.images_done, pool.images_total, "images"

    def error(self, pool):
        if pool.status != PoolStatus.FAILED:
            return ""
        return "; ".join(str(error) for error in ((pool.report or {}).get("errors") or [])[:3])

    def page(self, pool):
        return reverse("pool-detail", args=[pool.pk])


class EnlargementKind(JobKind):
    """Scoring the pool against the targets; `proposed` is done (the preview waits for the add step)."""

    name, label, model, transitions = "enlargement", "Gallery enlargement", GalleryEnlargement, ENLARGEMENT_TRANSITIONS
    retry = ("annotator.services.pools.enlargement.enlargement_retry", "enlargement")
    STATES = {
        EnlargementStatus.QUEUED: JobState.QUEUED,
        EnlargementStatus.RUNNING: JobState.RUNNING,
        EnlargementStatus.PROPOSED: JobState.DONE,
        EnlargementStatus.ADDED: JobState.DONE,
        EnlargementStatus.FAILED: JobState.FAILED,
    }

    def last_alive(self, enlargement):
        if enlargement.status == EnlargementStatus.RUNNING:
            return enlargement.started_at
        return enlargement.queued_at or enlargement.created_at

    def stale_after(self, state):
        return queued_stale_after() if state == JobState.QUEUED else RUN_STALE_AFTER

    def progress(self, enlargement):
        done = int(enlargement.status in (EnlargementStatus.PROPOSED, EnlargementStatus.ADDED))
        return done, 1, "scoring"

    def page(self, enlargement):
        return reverse("enlargement-detail", args=[enlargement.pk])


class RefinementFilterKind(JobKind):
    """Scoring a refinement's proposals (workers.tasks.refinement): `scoring` runs, a draft with an error
    failed, a scored refinement is done; a draft without an error is no job."""

    name, label, model, transitions = "refinement", "Proposal filter", Refinement, REFINEMENT_TRANSITIONS
    retry = ("annotator.services.refinement.proposals.refinement_filter_retry", "refinement")

    def state(self, refinement):
        if refinement.status == RefinementStatus.SCORING:
            return JobState.RUNNING
        if refinement.status == RefinementStatus.DRAFT:
            return JobState.FAILED if refinement.error else None
        return JobState.DONE

    def last_alive(self, refinement):
        return refinement.queued_at or refinement.updated_at

    def stale_after(self, state):
        return RUN_STALE_AFTER

    def progress(self, refinement):
        return int(self.state(refinement) == JobState.DONE), 1, "scoring"

    def page(self, refinement):
        return reverse("refinement-detail", args=[refinement.pk])


KINDS = {
    kind.name: kind
    for kind in (
        ImportKind(),
        RankingKind(),
        BuildKind(),
        ExportKind(),
        PoolImportKind(),
        EnlargementKind(),
        RefinementFilterKind(),
    )
}
_KIND_OF_MODEL = {kind.model: kind for kind in KINDS.values()}


def job_kind(job: models.Model) -> JobKind:
    return _KIND_OF_MODEL[type(job)]


def job_last_alive(job: models.Model) -> datetime | None:
    """When the job last showed life: its heartbeat, or when it was queued or started."""
    return job_kind(job).last_alive(job)


def job_stalled(job: models.Model, *, now: datetime | None = None) -> bool:
    """Whether a queued or running job has shown no sign of life for its kind's stale time."""
    kind = job_kind(job)
    state = kind.state(job)
    if state not in ACTIVE_STATES:
        return False
    alive = kind.last_alive(job)
    return alive is None or alive <= (now or timezone.now()) - kind.stale_after(state)


def job_state(job: models.Model, *, now: datetime | None = None) -> JobState | None:
    """The job's lifecycle state, STALLED for an active job past its stale time; None when it is no job."""
    if job_stalled(job, now=now):
        return JobState.STALLED
    return job_kind(job).state(job)


def job_move(job: models.Model, target: str, **changes) -> models.Model:
    """Move a locked job row to the status `target` (checked against its kind's transitions: a 409 if not
    allowed), set `changes` on it and save those fields. The caller holds the row lock in a transaction."""
    kind = job_kind(job)
    check_transition(transitions=kind.transitions, current=job.status, target=target, what=kind.label.lower())
    job.status = target
    for field, value in changes.items():
        setattr(job, field, value)
    fields = ["status", *changes]
    if any(field.name == "updated_at" for field in job._meta.concrete_fields):
        fields.append("updated_at")
    job.save(update_fields=fields)
    return job


def job_requeue(job: models.Model, *, queued: str, task: str) -> models.Model:
    """Queue a locked job again when it failed or stalled; the caller holds its row lock and has refused
    what its kind refuses beyond the transition table. A job queued or running that is not stalled is left
    as it is, nothing enqueued. A failed job moves to `queued` (its error cleared); a stalled queued job
    keeps its status with a new queued_at, a stalled running one keeps its status and the task's claim
    takes it over. Then `task` is enqueued after commit (in the background when a request retries it)."""
    state = job_state(job)
    if state in ACTIVE_STATES:
        return job
    now = timezone.now()
    if state != JobState.STALLED:  # failed, or done: no kind's table leads from done back to queued (409)
        job_move(job, queued, error="", finished_at=None, queued_at=now)
    elif job.status == queued:
        job.queued_at = now
        job.save(update_fields=["queued_at"])
    enqueue_long_on_commit(task, job.pk)
    return job


def job_retry(job: models.Model) -> models.Model:
    """Queue a failed or stalled job again through its kind's retry service (which locks the row, checks
    the move and enqueues after commit). A job that is queued or running and not stalled is left as it is."""
    path, keyword = job_kind(job).retry
    return import_string(path)(**{keyword: job})


def job_view(job: models.Model, *, now: datetime | None = None) -> dict:
    """What the progress widget and its JSON show: the lifecycle state, the kind's own status, progress."""
    kind = job_kind(job)
    state = job_state(job, now=now)
    done, total, unit = kind.progress(job)
    if state == JobState.DONE:
        percent = 100.0
    else:
        percent = round(100.0 * min(done, total) / total, 1) if total else 0.0
    alive = kind.last_alive(job)
    return {
        "kind": kind.name,
        "label": kind.label,
        "id": job.pk,
        "state": state.value if state else "",
        "state_display": state.label if state else "",
        "status": job.status,
        "status_display": job.get_status_display(),
        "active": state in ACTIVE_STATES,
        "retryable": state in (JobState.FAILED, JobState.STALLED),
        "done": done,
        "total": total,
        "unit": unit,
        "percent": percent,
        "error": kind.error(job),
        "last_alive": alive.isoformat() if alive else None,
        "status_url": reverse("job-status", args=[kind.name, job.pk]),
        "retry_url": reverse("job-retry", args=[kind.name, job.pk]),
        "page_url": kind.page(job),
    }
