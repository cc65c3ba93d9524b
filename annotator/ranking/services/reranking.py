"""Re-ranking runs: a cross-encoder or a vision-language judge scores a finished run's top K per query, both
directions, pair by pair.

A cross-encoder (ViLT's or BLIP's matching head) reads an image and a caption together, so it cannot embed a
gallery; at scale it re-ranks another model's candidates (ECCV Caption, Sec. 3.1). A re-ranking run is a
RankingRun of the cross-encoder's MachineAnnotator with `reranks` set to the run it re-scored: sharded,
resumable and cancellable like any run (workers/ranking/rerank.py), and to campaigns, provenance, Table A.1
and the label-set bias it is one more annotator.
"""

from __future__ import annotations

from annotator.core.errors import ApplicationError
from annotator.ranking.models.ranking import (
    AnnotatorKind,
    Candidate,
    Direction,
    MachineAnnotator,
    RankingRun,
    RunStatus,
)
from annotator.ranking.services.runs import MAX_TOP_K, run_queue

RERANKED_DIRECTIONS = (Direction.I2T, Direction.T2I)
# A vision-language judge (kind vlm_judge) runs the same way: its score is P(yes) to the HIT's question.
RERANKING_KINDS = (AnnotatorKind.CROSS_ENCODER, AnnotatorKind.VLM_JUDGE)


def rerank_run_start(
    *, source: RankingRun, annotator: MachineAnnotator, top_k=25, created_by=None, in_background: bool = False
) -> RankingRun:
    """Create a run of cross-encoder or vision-language judge `annotator` over the top `top_k` of each query of
    `source` (i2t and t2i) and enqueue it on the `gpu` queue after commit.

    Refuses (400) an annotator that is neither a cross_encoder nor a vlm_judge, a K above the source's, a source
    without image-caption candidates; (409) a source that has not succeeded. Locks the annotator row, so two
    concurrent starts serialise: while a re-ranking of the same source, annotator and K is queued or
    running, that run is returned instead of a second one. Returns the run as queued (`in_background`, what
    a request uses) or as it is after the commit (with eager Celery, already finished).
    """
    try:
        top_k = int(top_k)
    except (TypeError, ValueError):
        raise ApplicationError("top_k must be a whole number.") from None
    if annotator.kind not in RERANKING_KINDS:
        raise ApplicationError(
            f"Annotator {annotator.name} is a {annotator.kind}; a re-ranking run needs a cross_encoder or a "
            "vlm_judge annotator."
        )
    if source.status != RunStatus.SUCCEEDED:
        raise ApplicationError(f"Run {source.pk} is {source.status}; re-rank a run once it has succeeded.", status=409)
    if not 1 <= top_k <= min(source.top_k, MAX_TOP_K):
        raise ApplicationError(f"top_k must be between 1 and {source.top_k}, the K of run {source.pk}.")
    if not Candidate.objects.filter(run=source, direction__in=RERANKED_DIRECTIONS).exists():
        raise ApplicationError(f"Run {source.pk} has no image-caption candidates (i2t, t2i) to re-rank.")
    return run_queue(
        annotator=annotator,
        match={"reranks": source, "top_k": top_k},
        created_by=created_by,
        in_background=in_background,
        dataset_id=source.dataset_id,
    )
