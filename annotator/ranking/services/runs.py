"""Ranking runs: start, cancel and retry.

No torch here: the web process only records what to do and enqueues `workers.tasks.ranking.ranking_run_task`
on the `gpu` queue; `workers/ranking/pipeline.py` does the work and moves the run through its states.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_move, job_requeue, job_stalled
from annotator.core.queue import enqueue_in_background_on_commit, enqueue_long_on_commit
from annotator.datasets.models.dataset import Dataset, DatasetStatus
from annotator.ranking.models.ranking import AnnotatorKind, MachineAnnotator, RankingRun, RunStatus
from annotator.ranking.services.kinds import rankable_kinds

MAX_TOP_K = 1000
ACTIVE_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)


def ranking_run_start(
    *, dataset: Dataset, annotator: MachineAnnotator, top_k: int = 25, created_by=None, in_background: bool = False
) -> RankingRun:
    """Create a RankingRun of `annotator` over `dataset` and enqueue it on the `gpu` queue after commit.

    Locks the annotator row (SELECT ... FOR UPDATE) so two concurrent starts serialise; while a run of the
    same annotator, dataset and top_k is queued or running, that run is returned instead of a second one
    (so a double click starts one run). A finished run is never changed: starting again creates a new run.
    Returns the run as it is after the commit (already finished when Celery runs eagerly outside a request;
    a request's run goes on in the background, annotator.core.queue.enqueue_long_on_commit), or, with
    `in_background` (a request that must answer at once), as it was queued: with eager Celery the run then
    goes on in a thread of this process (annotator.core.queue.enqueue_in_background_on_commit).
    """
    try:
        top_k = int(top_k)
    except (TypeError, ValueError):
        raise ApplicationError("top_k must be a whole number.") from None
    if not 1 <= top_k <= MAX_TOP_K:
        raise ApplicationError(f"top_k must be between 1 and {MAX_TOP_K}.")
    if annotator.kind in (AnnotatorKind.CROSS_ENCODER, AnnotatorKind.VLM_JUDGE):
        raise ApplicationError(
            f"Annotator {annotator.name} is a {annotator.kind}: it scores pairs and cannot embed a gallery; "
            "re-rank a finished run's top K with it instead."
        )
    if annotator.kind not in rankable_kinds():
        if annotator.kind not in AnnotatorKind.values:
            raise ApplicationError(
                f"Annotator {annotator.name} needs the plugin of kind {annotator.kind!r}, which is not installed.",
                status=409,
            )
        raise ApplicationError(
            f"Annotator {annotator.name} ({annotator.kind}) cannot rank; it is an imported label set."
        )
    if dataset.status != DatasetStatus.READY:
        raise ApplicationError(
            f"Dataset {dataset.name} is {dataset.status}; rank it once its import is ready.", status=409
        )
    if not dataset.images.exists() or not dataset.captions.exists():
        raise ApplicationError(f"Dataset {dataset.name} has no images or no captions to rank.")
    return run_queue(
        annotator=annotator,
        match={"dataset": dataset, "top_k": top_k},
        created_by=created_by,
        in_background=in_background,
    )


def run_queue(
    *, annotator: MachineAnnotator, match: dict, created_by=None, in_background: bool = False, **fields
) -> RankingRun:
    """Queue one run of `annotator` with the fields `match` (and `fields`), or return the one of those that is
    queued or running: the one lock-create-enqueue of every kind of run (a ranking, a re-ranking, a judge).

    Locks the annotator row (SELECT ... FOR UPDATE) so two concurrent starts serialise; enqueues on the `gpu`
    queue after commit. Returns the run as queued (`in_background`) or as it is after the commit.
    """
    with transaction.atomic():
        MachineAnnotator.objects.select_for_update().get(pk=annotator.pk)
        active = (
            RankingRun.objects.filter(annotator=annotator, status__in=ACTIVE_RUN_STATUSES, **match)
            .order_by("created_at")
            .first()
        )
        if active is not None:
            return active
        run = RankingRun.objects.create(
            annotator=annotator,
            created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
            status=RunStatus.QUEUED,
            **match,
            **fields,
        )
        if in_background:
            enqueue_in_background_on_commit(task_names.RANKING_RUN, run.pk)
        else:
            enqueue_long_on_commit(task_names.RANKING_RUN, run.pk)
    if not in_background:
        run.refresh_from_db()  # with eager Celery (the embedded default) it has already run at commit
    return run


def ranking_run_cancel(*, run: RankingRun) -> RankingRun:
    """Mark a queued or running run cancelled; the worker stops before its next chunk.

    Locks the run row. Idempotent: cancelling a cancelled run returns it unchanged. Candidates of the chunks
    already committed stay (a retry resumes from them); a finished or failed run cannot be cancelled (409).
    """
    with transaction.atomic():
        locked = RankingRun.objects.select_for_update().get(pk=run.pk)
        if locked.status == RunStatus.CANCELLED:
            return locked
        job_move(locked, RunStatus.CANCELLED, finished_at=timezone.now())
    return locked


def ranking_run_retry(*, run: RankingRun) -> RankingRun:
    """Queue a failed, cancelled or stalled run again; the worker resumes from the last committed chunk.

    Locks the run row. Idempotent: retrying a queued run that is not stalled returns it without enqueuing
    twice. A succeeded run cannot be retried (409); a running one neither while it shows progress (it is
    already working). A stalled one keeps its status and gets a new message: the task's claim takes a run
    whose worker went silent over (annotator.ranking.services.lifecycle.run_claim).
    """
    with transaction.atomic():
        locked = RankingRun.objects.select_for_update().get(pk=run.pk)
        if locked.status == RunStatus.RUNNING and not job_stalled(locked):
            raise ApplicationError("This run is running; cancel it first.", status=409)
        return job_requeue(locked, queued=RunStatus.QUEUED, task=task_names.RANKING_RUN)
