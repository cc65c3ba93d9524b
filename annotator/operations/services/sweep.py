"""The sweep: nothing waits forever for a Celery message that was lost.

A message is lost when Redis restarts without its data, refuses writes, or the web could not reach it
after a commit (annotator/core/queue.py); a task stops half-way when its worker is killed. The work itself is
always findable from the database, so celery beat runs this every SWEEP_EVERY_SECONDS:

- submissions without a score SWEEP_SCORE_AFTER_SECONDS after submit are scored here and now (scoring
  takes milliseconds, and scored_at makes a second scoring a no-op);
- leases past their expiry are released (the same service the lease beat runs);
- imports, campaign builds, ranking runs and their shards, exports and decisions for MTurk that show no
  progress for their stale time are queued again. Each task claims its job under a row lock, so a duplicate of
  a message that was only late does nothing. SweepRequeue remembers when a job was last queued, so a job
  waiting in a long queue is not queued again on every pass.

Every pass leaves a SweepRun row (counts, and what it could not fix, in words) for the operations page.
"""

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import (
    BUILD_STALE_AFTER,
    EXPORT_STALE_AFTER,
    IMPORT_STALE_AFTER,
    RUN_STALE_AFTER,
    job_retry,
    queued_stale_after,
    shard_stale_after,
)
from annotator.core.models.operations import RequeueKind, SweepRequeue, SweepRun
from annotator.core.queue import enqueue_on_commit
from annotator.crowd.services.assignments import assignments_expire
from annotator.labels.models.exports import ExportStatus
from annotator.operations.selectors.operations import (
    StaleTimes,
    assignments_unscored_overdue,
    builds_stalled,
    exports_late,
    imports_stalled,
    ranking_runs_late,
    ranking_shards_late,
    requeued_recently,
)
from annotator.quality.selectors.external_decisions import external_decisions_lost
from annotator.quality.services.scoring import assignment_score
from annotator.ranking.models.ranking import RunStatus, ShardStatus

logger = logging.getLogger(__name__)

SCORE_BATCH = 500
KEEP_SWEEPS = timedelta(days=1)


def stale_times() -> StaleTimes:
    """When each kind of work counts as late: the settings, and the stale times of the services that own it."""
    return StaleTimes(
        score_after=timedelta(seconds=getattr(settings, "SWEEP_SCORE_AFTER_SECONDS", 60.0)),
        imports=IMPORT_STALE_AFTER,
        builds=BUILD_STALE_AFTER,
        queued_jobs=queued_stale_after(),
        running_exports=EXPORT_STALE_AFTER,
        silent_runs=RUN_STALE_AFTER,
        silent_shards=shard_stale_after(),
    )


def _score_overdue(*, stale: StaleTimes, now, deadline: float, problems: list[str]) -> int:
    scored = 0
    overdue = assignments_unscored_overdue(stale=stale, now=now).order_by("submitted_at")
    for assignment_id in list(overdue.values_list("pk", flat=True)[:SCORE_BATCH]):
        if time.monotonic() > deadline:
            break  # the next pass goes on; a pass never outlives its beat interval by much
        try:
            result = assignment_score(assignment_id=assignment_id)
        except Exception as error:  # one broken assignment must not keep the others unscored
            logger.exception("the sweep could not score assignment %s", assignment_id)
            problems.append(f"assignment {assignment_id} could not be scored: {type(error).__name__}: {error}")
            continue
        scored += int(result is not None and result.scored_at is not None)
    return scored


def _mark_requeued(kind: str, object_id: int, *, now) -> None:
    with transaction.atomic():
        mark, created = SweepRequeue.objects.select_for_update().get_or_create(
            kind=kind, object_id=object_id, defaults={"queued_at": now}
        )
        if not created:
            mark.queued_at, mark.times = now, mark.times + 1
            mark.save(update_fields=["queued_at", "times"])


def _requeue(kind: str, task: str, object_id: int, *, within: timedelta, now, problems: list[str]) -> bool:
    if requeued_recently(kind=kind, object_id=object_id, within=within, now=now):
        return False  # queued again already; its message probably waits in a long queue
    try:
        enqueue_on_commit(task, object_id)
    except Exception as error:
        problems.append(f"{kind} {object_id} could not be queued again: {type(error).__name__}: {error}")
        return False
    _mark_requeued(kind, object_id, now=now)
    return True


def _resume(requeue_kind: str, late, *, within, now, problems: list[str], busy_is_fine: bool = False) -> list[int]:
    """Retry each late job through its kind's retry service (annotator.core.jobs.job_retry: it locks the row,
    checks the job is still failed or stalled, and queues its task), unless the sweep queued it less than
    `within(job)` ago: then its message probably waits in a long queue. With `busy_is_fine`, a 409 means a
    worker holds the job right now (a build under way) and is no problem."""
    resumed = []
    for job in late:
        if requeued_recently(kind=requeue_kind, object_id=job.pk, within=within(job), now=now):
            continue
        try:
            job_retry(job)
        except ApplicationError as error:
            if not (busy_is_fine and error.status == 409):
                problems.append(f"{requeue_kind} {job.pk} cannot resume: {error.message}")
            continue
        except Exception as error:  # a broker that is down: the next pass tries again
            problems.append(f"{requeue_kind} {job.pk} could not be queued again: {type(error).__name__}: {error}")
            continue
        _mark_requeued(requeue_kind, job.pk, now=now)
        resumed.append(job.pk)
    return resumed


def _resume_imports(*, stale: StaleTimes, now, problems: list[str]) -> list[int]:
    late = imports_stalled(stale=stale, now=now).order_by("pk")
    return _resume(RequeueKind.IMPORT, late, within=lambda job: stale.imports, now=now, problems=problems)


def _resume_builds(*, stale: StaleTimes, now, problems: list[str]) -> list[int]:
    """Under SKIP LOCKED: a build a worker is still running holds the row and answers 409."""
    late = builds_stalled(stale=stale, now=now).order_by("pk")
    within = lambda job: stale.builds  # noqa: E731
    return _resume(RequeueKind.BUILD, late, within=within, now=now, problems=problems, busy_is_fine=True)


def _resume_runs(*, stale: StaleTimes, now, problems: list[str]) -> list[int]:
    """The task's claim (annotator.ranking.services.lifecycle.run_claim) makes a duplicate do nothing."""

    def within(run):
        return stale.queued_jobs if run.status == RunStatus.QUEUED else stale.silent_runs

    late = ranking_runs_late(stale=stale, now=now)
    return _resume(RequeueKind.RANKING, late, within=within, now=now, problems=problems)


def _resume_shards(*, stale: StaleTimes, now, problems: list[str]) -> list[int]:
    """Shards of running runs whose message was lost or whose worker died. The shard's claim
    (annotator.ranking.services.lifecycle.shard_claim) makes a duplicate do nothing while the shard still commits
    chunks, and lets the new task take over a silent one at its first uncommitted chunk."""
    resumed = []
    for shard in ranking_shards_late(stale=stale, now=now)[:SCORE_BATCH]:
        within = stale.queued_jobs if shard.status == ShardStatus.QUEUED else stale.silent_shards
        kind, task = RequeueKind.RANKING_SHARD, task_names.RANKING_SHARD
        if _requeue(kind, task, shard.pk, within=within, now=now, problems=problems):
            resumed.append(shard.pk)
    return resumed


def _resume_exports(*, stale: StaleTimes, now, problems: list[str]) -> list[int]:
    """export_run leaves a job another task is writing alone, so a duplicate does nothing."""

    def within(job):
        return stale.queued_jobs if job.status == ExportStatus.QUEUED else stale.running_exports

    late = exports_late(stale=stale, now=now)
    return _resume(RequeueKind.EXPORT, late, within=within, now=now, problems=problems)


def _resume_external_decisions(*, stale: StaleTimes, now, problems: list[str]) -> list[int]:
    """The task locks the decision and skips a sent one, so a duplicate never sends it twice."""
    return [
        decision_id
        for decision_id in external_decisions_lost(stale=stale.queued_jobs, now=now)
        .order_by("updated_at")
        .values_list("pk", flat=True)[:SCORE_BATCH]
        if _requeue(
            RequeueKind.MTURK_DECISION,
            task_names.EXTERNAL_DECISION_SEND,
            decision_id,
            within=stale.queued_jobs,
            now=now,
            problems=problems,
        )
    ]


def work_sweep(*, now=None, time_budget_seconds: float = 20.0) -> SweepRun:
    """One pass of the sweep (see the module docstring); returns its SweepRun.

    Safe to run concurrently with itself and with every task: scoring locks each Assignment row and is a
    no-op once scored_at is set; each job kind is queued through its own service or claimed by its task
    under a row lock. Bounded: at most SCORE_BATCH submissions and about `time_budget_seconds` of scoring
    per pass; the rest waits for the next pass.
    """
    now = now or timezone.now()
    stale = stale_times()
    started = time.monotonic()
    problems: list[str] = []
    scored = _score_overdue(stale=stale, now=now, deadline=started + time_budget_seconds, problems=problems)
    expired = assignments_expire(now=now)
    requeued = {}
    for kind, resume in (
        ("imports", _resume_imports),
        ("builds", _resume_builds),
        ("ranking_runs", _resume_runs),
        ("ranking_shards", _resume_shards),
        ("exports", _resume_exports),
        ("mturk_decisions", _resume_external_decisions),
    ):
        try:
            ids = resume(stale=stale, now=now, problems=problems)
        except Exception as error:  # a kind that fails (its table locked, a bug) leaves the others to run
            logger.exception("the sweep of %s failed", kind)
            problems.append(f"the sweep of {kind} failed: {type(error).__name__}: {error}")
            continue
        if ids:
            requeued[kind] = ids
    if scored or requeued or problems:
        logger.warning("sweep: scored %d late submissions, queued again %s, problems %s", scored, requeued, problems)
    SweepRun.objects.filter(started_at__lt=now - KEEP_SWEEPS).delete()
    return SweepRun.objects.create(
        started_at=now,
        finished_at=timezone.now(),
        scored=scored,
        expired=expired,
        requeued=requeued,
        problems=problems[:50],
    )
