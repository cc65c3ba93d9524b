"""Model evaluations: thin callers of annotator.research.services.scorecards (the `default` queue) and, for
CxC Table 5 of one of Vericap's annotators, of the pair-similarity code (the `gpu` queue)."""

from celery import shared_task

from annotator.core import task_names
from annotator.research.services.cxc_table5 import (
    cxc_annotator_scores_claim,
    cxc_annotator_scores_fail,
    cxc_annotator_scores_store,
)
from annotator.research.services.scorecards import evaluation_run
from workers.tasks.jobs import job_task


@shared_task(
    name=task_names.EVALUATION_RUN,
    acks_late=True,  # idempotent: a finished evaluation is left alone, a half-scored one is scored again
    reject_on_worker_lost=True,
    time_limit=3600,
    soft_time_limit=3600 - 60,
    autoretry_for=(ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=3,
)
def evaluation_run_task(evaluation_id: int) -> str:
    """Score evaluation `evaluation_id`; returns its final status."""
    return evaluation_run(evaluation_id=evaluation_id).status


@job_task(name=task_names.CXC_ANNOTATOR_SCORES, hours=6, transient_retries=3)
def cxc_annotator_scores_task(evaluation_id: int) -> str:
    """Compute the annotator's scores of CxC evaluation `evaluation_id`'s rated pairs, store them, and score
    them (Table 5); returns the evaluation's final status. Idempotent: a finished evaluation is left alone,
    one whose scores are stored is only scored. torch is imported inside, so the web process never loads it."""
    from workers.ranking.pair_similarity import labelset_cxc_annotator_scores

    job = cxc_annotator_scores_claim(evaluation_id=evaluation_id)
    if job is not None:
        try:
            scores = labelset_cxc_annotator_scores(label_set=job["label_set"], kind=job["kind"])
        except (ConnectionError, TimeoutError):
            raise  # transient: retried with backoff, the evaluation still running
        except Exception as error:  # a model that cannot load, a pair kind it cannot read: said on the evaluation
            failed = cxc_annotator_scores_fail(
                evaluation_id=evaluation_id, message=f"The {job['kind']} annotator could not score the pairs: {error}"
            )
            return failed.status
        cxc_annotator_scores_store(evaluation_id=evaluation_id, scores=scores)
    return evaluation_run(evaluation_id=evaluation_id).status
