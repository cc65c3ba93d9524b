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
from django.urls import reverse
from django.utils import timezone

from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_long_on_commit


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


def epoch_time(seconds) -> datetime | None:
    return datetime.fromtimestamp(float(seconds), tz=timezone.get_current_timezone()) if seconds else None


def latest_moment(*moments: datetime | None) -> datetime | None:
    known = [moment for moment in moments if moment is not None]
    return max(known) if known else None


class JobKind:
    """How one kind of job reads as the shared lifecycle. A kind names itself (in URLs and JSON), its model
    and status transitions; `retry` queues a failed or stalled job again through the step's own service;
    `visible` and `may_retry` answer for the jobs page with the step's own access rules."""

    name: str
    label: str
    model: type[models.Model]
    transitions: dict

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

    def retry(self, job):
        raise NotImplementedError

    def visible(self, user):
        """The jobs of this kind `user` may see: who may see what the job works on (the step's selectors/access.py)."""
        raise NotImplementedError

    def may_retry(self, user, job) -> bool:
        """Whether `user` may retry `job`: who may start it."""
        raise NotImplementedError


# Each pipeline step declares its kinds in its own jobs.py and registers them (AnnotatorConfig.ready imports
# every step's jobs module): core knows the lifecycle, not the steps.
KINDS: dict[str, JobKind] = {}
_KIND_OF_MODEL: dict[type[models.Model], JobKind] = {}


def job_kind_register(kind: JobKind) -> JobKind:
    """Add one kind of job to the shared lifecycle (the jobs page, retry, the sweep)."""
    KINDS[kind.name] = kind
    _KIND_OF_MODEL[kind.model] = kind
    return kind


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
    return job_kind(job).retry(job)


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
