"""One lifecycle for the four kinds of background job: dataset imports, ranking runs, campaign builds, exports.

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

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.module_loading import import_string

from annotator.models import (
    Campaign,
    CampaignStatus,
    Dataset,
    DatasetStatus,
    ExportJob,
    ExportStatus,
    RankingRun,
    RunStatus,
)
from annotator.models.state import check_transition
from annotator.queue import enqueue_on_commit


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


@dataclass(frozen=True)
class JobKind:
    """How one kind of job reads as the shared lifecycle."""

    name: str  # in URLs and JSON: import, ranking, build, export
    label: str
    model: type[models.Model]
    state: Callable[[models.Model], JobState | None]  # None: the object is not a job right now
    last_alive: Callable[[models.Model], datetime | None]
    stale_after: Callable[[JobState], timedelta]
    progress: Callable[[models.Model], tuple[int, int, str]]  # done, total, the unit counted
    error: Callable[[models.Model], str]
    retry: str  # dotted path of the kind's retry service, called as retry(<retry_keyword>=<object>)
    retry_keyword: str
    page: Callable[[models.Model], str]  # the page that shows the job


def _epoch(seconds) -> datetime | None:
    return datetime.fromtimestamp(float(seconds), tz=timezone.get_current_timezone()) if seconds else None


def _latest(*moments: datetime | None) -> datetime | None:
    known = [moment for moment in moments if moment is not None]
    return max(known) if known else None


# ---- dataset imports -------------------------------------------------------------------------------------


def _import_state(dataset: Dataset) -> JobState | None:
    if dataset.status == DatasetStatus.IMPORTING:
        return JobState.QUEUED if (dataset.report or {}).get("phase") == "queued" else JobState.RUNNING
    if dataset.status == DatasetStatus.FAILED:
        return JobState.FAILED
    return JobState.DONE


def _import_progress(dataset: Dataset) -> tuple[int, int, str]:
    total = dataset.images_total + dataset.captions_total
    done = min(dataset.images_done, dataset.images_total) + min(dataset.captions_done, dataset.captions_total)
    return done, total, "images and captions"


def _import_error(dataset: Dataset) -> str:
    report = dataset.report or {}
    if dataset.status != DatasetStatus.FAILED:
        return ""
    errors = report.get("errors") or []
    return "; ".join(str(error) for error in errors[:3])


# ---- ranking runs ----------------------------------------------------------------------------------------

RUN_STATES = {
    RunStatus.QUEUED: JobState.QUEUED,
    RunStatus.RUNNING: JobState.RUNNING,
    RunStatus.SUCCEEDED: JobState.DONE,
    RunStatus.FAILED: JobState.FAILED,
    RunStatus.CANCELLED: JobState.FAILED,
}


def _run_last_alive(run: RankingRun) -> datetime | None:
    """The heartbeat the pipeline writes into `progress`, its resume, its start, or its creation."""
    progress = run.progress or {}
    if run.status == RunStatus.QUEUED:
        return run.queued_at or run.created_at
    alive = _latest(_epoch(progress.get("beat_at")), _epoch(progress.get("resumed_at")), run.started_at)
    return alive or run.created_at


# ---- campaign builds -------------------------------------------------------------------------------------


def _build_state(campaign: Campaign) -> JobState | None:
    if campaign.status == CampaignStatus.BUILDING:
        # Whether a worker holds it is known only under its row lock; until the build ends it reads as queued.
        return JobState.QUEUED
    if campaign.status == CampaignStatus.DRAFT:
        return JobState.FAILED if campaign.build_error else None
    return JobState.DONE if campaign.built_at else None


def _build_progress(campaign: Campaign) -> tuple[int, int, str]:
    """A build is one transaction: nothing of it is visible until it is all there."""
    return int(_build_state(campaign) == JobState.DONE), 1, "build"


# ---- exports ---------------------------------------------------------------------------------------------

EXPORT_STATES = {
    ExportStatus.QUEUED: JobState.QUEUED,
    ExportStatus.RUNNING: JobState.RUNNING,
    ExportStatus.SUCCEEDED: JobState.DONE,
    ExportStatus.FAILED: JobState.FAILED,
}


def _export_progress(job: ExportJob) -> tuple[int, int, str]:
    return job.rows, job.rows, "rows"


def _queued_or(running: timedelta) -> Callable[[JobState], timedelta]:
    return lambda state: queued_stale_after() if state == JobState.QUEUED else running


KINDS = {
    kind.name: kind
    for kind in (
        JobKind(
            name="import",
            label="Import",
            model=Dataset,
            state=_import_state,
            last_alive=lambda dataset: dataset.updated_at,  # every progress write moves it
            stale_after=lambda state: IMPORT_STALE_AFTER,
            progress=_import_progress,
            error=_import_error,
            retry="annotator.services.importing.uploads.dataset_import_retry",
            retry_keyword="dataset",
            page=lambda dataset: reverse("dataset-detail", args=[dataset.pk]),
        ),
        JobKind(
            name="ranking",
            label="Ranking run",
            model=RankingRun,
            state=lambda run: RUN_STATES.get(run.status),
            last_alive=_run_last_alive,
            stale_after=_queued_or(RUN_STALE_AFTER),
            progress=lambda run: (run.chunks_done, run.chunks_total, "chunks"),
            error=lambda run: run.error,
            retry="annotator.services.ranking.runs.ranking_run_retry",
            retry_keyword="run",
            page=lambda run: reverse("ranking-run", args=[run.pk]),
        ),
        JobKind(
            name="build",
            label="Build",
            model=Campaign,
            state=_build_state,
            last_alive=lambda campaign: campaign.build_requested_at,
            stale_after=lambda state: BUILD_STALE_AFTER,
            progress=_build_progress,
            error=lambda campaign: campaign.build_error,
            retry="annotator.services.campaigns.build.campaign_build_request",
            retry_keyword="campaign",
            page=lambda campaign: reverse("campaign-detail", args=[campaign.pk]),
        ),
        JobKind(
            name="export",
            label="Export",
            model=ExportJob,
            state=lambda job: EXPORT_STATES.get(job.status),
            last_alive=lambda job: (
                job.started_at if job.status == ExportStatus.RUNNING else job.queued_at or job.created_at
            ),
            stale_after=_queued_or(EXPORT_STALE_AFTER),
            progress=_export_progress,
            error=lambda job: job.error,
            retry="annotator.services.exports.jobs.export_retry",
            retry_keyword="job",
            page=lambda job: reverse("research-campaign", args=[job.campaign_id]),
        ),
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


def job_move(job: models.Model, *, target: str, transitions: dict, what: str, **changes) -> models.Model:
    """Move a locked job row to the status `target` (checked against its kind's `transitions`, 409 if not
    allowed), set `changes` on it and save those fields. The caller holds the row lock in a transaction."""
    check_transition(transitions=transitions, current=job.status, target=target, what=what)
    job.status = target
    for field, value in changes.items():
        setattr(job, field, value)
    fields = ["status", *changes]
    if any(field.name == "updated_at" for field in job._meta.concrete_fields):
        fields.append("updated_at")
    job.save(update_fields=fields)
    return job


def job_requeue(job: models.Model, *, queued: str, transitions: dict, what: str, task: str) -> models.Model:
    """Queue a locked job again when it failed or stalled; the caller holds its row lock and has refused
    what its kind refuses beyond the transition table. A job queued or running that is not stalled is left
    as it is, nothing enqueued. A failed job moves to `queued` (its error cleared); a stalled queued job
    keeps its status with a new queued_at, a stalled running one keeps its status and the task's claim
    takes it over. Then `task` is enqueued after commit."""
    state = job_state(job)
    if state in ACTIVE_STATES:
        return job
    now = timezone.now()
    if state != JobState.STALLED:  # failed, or done: no kind's table leads from done back to queued (409)
        job_move(job, target=queued, transitions=transitions, what=what, error="", finished_at=None, queued_at=now)
    elif job.status == queued:
        job.queued_at = now
        job.save(update_fields=["queued_at"])
    enqueue_on_commit(task, job.pk)
    return job


def job_retry(job: models.Model) -> models.Model:
    """Queue a failed or stalled job again through its kind's retry service (which locks the row, checks
    the move and enqueues after commit). A job that is queued or running and not stalled is left as it is."""
    kind = job_kind(job)
    return import_string(kind.retry)(**{kind.retry_keyword: job})


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
