"""Machine annotators and ranking runs: register a model, start, cancel and retry a run.

No torch here: the web process only records what to do and enqueues `workers.tasks.ranking.ranking_run_task`
on the `gpu` queue; `workers/ranking/pipeline.py` does the work and moves the run through its states.
"""

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.errors import ApplicationError
from annotator.models import (
    RUN_TRANSITIONS,
    AnnotatorKind,
    Dataset,
    DatasetStatus,
    MachineAnnotator,
    RankingRun,
    RunStatus,
)
from annotator.models.state import check_transition
from annotator.queue import enqueue_on_commit

RANKING_TASK = "workers.tasks.ranking.ranking_run_task"
# Kinds a ranking run can execute (`external` label sets are imported, not computed).
RANKABLE_KINDS = (AnnotatorKind.CLIP, AnnotatorKind.MINILM_PIVOT, AnnotatorKind.TFIDF_PIVOT)
MAX_TOP_K = 1000
ACTIVE_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)


def annotator_register(
    *, name: str, kind: str, checkpoint_path: str = "", config: dict | None = None
) -> MachineAnnotator:
    """Create the MachineAnnotator `name`, or return it when it already exists with the same kind and checkpoint.

    Idempotent by name; an existing annotator with a different kind or checkpoint is refused (409) rather
    than silently changed, because its past runs were computed with the old model. Takes no lock beyond the
    unique constraint on `name` (a concurrent duplicate insert is caught and the winner returned).
    `weights_hash` is filled in by the worker when it first loads the weights.
    """
    name = (name or "").strip()
    checkpoint_path = (checkpoint_path or "").strip()
    if not name:
        raise ApplicationError("Give the annotator a name.")
    if len(name) > 100:
        raise ApplicationError("An annotator name has at most 100 characters.")
    if kind not in RANKABLE_KINDS:
        choices = ", ".join(RANKABLE_KINDS)
        raise ApplicationError(f"Unknown annotator kind {kind!r}; choose one of: {choices}.")
    if kind == AnnotatorKind.CLIP and not checkpoint_path:
        raise ApplicationError("A clip annotator needs the directory of a Hugging Face CLIP checkpoint.")
    if kind != AnnotatorKind.CLIP and checkpoint_path:
        raise ApplicationError(f"A {kind} annotator uses bundled weights; leave the checkpoint empty.")
    if config is not None and not isinstance(config, dict):
        raise ApplicationError("The annotator config must be a JSON object.")
    existing = MachineAnnotator.objects.filter(name=name).first()
    if existing is None:
        annotator = MachineAnnotator(name=name, kind=kind, checkpoint_path=checkpoint_path, config=config or {})
        annotator.full_clean()
        try:
            with transaction.atomic():
                annotator.save()
            return annotator
        except IntegrityError:  # a concurrent registration of the same name won the race
            existing = MachineAnnotator.objects.filter(name=name).first()
            if existing is None:
                raise
    if existing.kind != kind or existing.checkpoint_path != checkpoint_path:
        raise ApplicationError(
            f"An annotator named {name!r} already exists as {existing.kind}"
            + (f" from {existing.checkpoint_path}" if existing.checkpoint_path else "")
            + "; pick another name.",
            status=409,
        )
    return existing


def ranking_run_start(*, dataset: Dataset, annotator: MachineAnnotator, top_k: int = 25, created_by=None) -> RankingRun:
    """Create a RankingRun of `annotator` over `dataset` and enqueue it on the `gpu` queue after commit.

    Locks the annotator row (SELECT ... FOR UPDATE) so two concurrent starts serialise; while a run of the
    same annotator, dataset and top_k is queued or running, that run is returned instead of a second one
    (so a double click starts one run). A finished run is never changed: starting again creates a new run.
    Returns the run as it is after the commit (already finished when Celery runs eagerly).
    """
    try:
        top_k = int(top_k)
    except (TypeError, ValueError):
        raise ApplicationError("top_k must be a whole number.") from None
    if not 1 <= top_k <= MAX_TOP_K:
        raise ApplicationError(f"top_k must be between 1 and {MAX_TOP_K}.")
    if annotator.kind not in RANKABLE_KINDS:
        raise ApplicationError(
            f"Annotator {annotator.name} ({annotator.kind}) cannot rank; it is an imported label set."
        )
    if dataset.status != DatasetStatus.READY:
        raise ApplicationError(
            f"Dataset {dataset.name} is {dataset.status}; rank it once its import is ready.", status=409
        )
    if not dataset.images.exists() or not dataset.captions.exists():
        raise ApplicationError(f"Dataset {dataset.name} has no images or no captions to rank.")
    with transaction.atomic():
        MachineAnnotator.objects.select_for_update().get(pk=annotator.pk)
        active = (
            RankingRun.objects.filter(dataset=dataset, annotator=annotator, top_k=top_k, status__in=ACTIVE_RUN_STATUSES)
            .order_by("created_at")
            .first()
        )
        if active is not None:
            return active
        run = RankingRun.objects.create(
            dataset=dataset,
            annotator=annotator,
            top_k=top_k,
            created_by=created_by if getattr(created_by, "is_authenticated", False) else None,
            status=RunStatus.QUEUED,
        )
        enqueue_on_commit(RANKING_TASK, run.pk)
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
        check_transition(
            transitions=RUN_TRANSITIONS, current=locked.status, target=RunStatus.CANCELLED, what="ranking run"
        )
        locked.status = RunStatus.CANCELLED
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "finished_at"])
    return locked


def ranking_run_retry(*, run: RankingRun) -> RankingRun:
    """Queue a failed or cancelled run again; the worker resumes from the last committed chunk.

    Locks the run row. Idempotent: retrying a queued run returns it without enqueuing twice. A succeeded
    run cannot be retried (409); a running one neither (it is already working).
    """
    with transaction.atomic():
        locked = RankingRun.objects.select_for_update().get(pk=run.pk)
        if locked.status == RunStatus.QUEUED:
            return locked
        check_transition(
            transitions=RUN_TRANSITIONS, current=locked.status, target=RunStatus.QUEUED, what="ranking run"
        )
        if locked.status == RunStatus.RUNNING:
            raise ApplicationError("This run is running; cancel it first.", status=409)
        locked.status = RunStatus.QUEUED
        locked.error = ""
        locked.finished_at = None
        locked.save(update_fields=["status", "error", "finished_at"])
        enqueue_on_commit(RANKING_TASK, locked.pk)
    return locked
