"""The refinement filter on the `default` queue: a thin caller of workers.ranking.scoring and the
refinement services. torch is imported inside the task, so the web process never loads it."""

from annotator.core import task_names
from annotator.finegrained.services.refinement.filtering import refinement_score_inputs
from annotator.finegrained.services.refinement.proposals import (
    proposals_score_store,
    refinement_fail,
)
from workers.tasks.jobs import job_task


@job_task(name=task_names.REFINEMENT_SCORE, hours=2, transient_retries=3)
def refinement_score_task(refinement_id: int) -> str:
    """Score refinement `refinement_id`'s proposals and keep those that beat the original. Idempotent: a
    refinement no longer scoring is left alone (proposals_score_store checks under its row lock)."""
    from workers.ranking.scoring import pivot_pair_scores

    inputs = refinement_score_inputs(refinement_id=refinement_id)
    if inputs is None:
        return "skipped"
    try:
        scores = pivot_pair_scores(kind=inputs["kind"], pairs=inputs["pairs"], corpus=inputs["corpus"])
    except Exception as error:  # a model that cannot load: the refinement says why and goes back to draft
        refinement_fail(refinement_id=refinement_id, message=f"The filter failed: {error}")
        raise
    result = proposals_score_store(refinement_id=refinement_id, scores=dict(zip(inputs["ids"], scores, strict=True)))
    return result.status
