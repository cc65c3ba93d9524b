"""Ranking runs and their shards on the `gpu` queue (settings.CELERY_TASK_ROUTES): callers of workers.ranking.pipeline.

The pipeline (and torch) is imported inside the task, so the web process, which imports this module to
enqueue by name, never loads torch.
"""

import logging

from celery.signals import worker_ready
from django.conf import settings

from annotator.core import task_names
from workers.tasks.jobs import job_task

logger = logging.getLogger(__name__)


@worker_ready.connect
def preload_ranking(**kwargs) -> None:
    """With RANKING_PRELOAD (built-in kinds, comma-separated), a worker imports torch and the pipeline and
    loads those annotators when it starts, so its first shard does not spend seconds on them. A worker of
    other queues leaves it empty and never loads torch."""
    kinds = [kind for kind in getattr(settings, "RANKING_PRELOAD", []) if kind]
    if not kinds:
        return
    from workers.ranking.annotators import load_annotator
    from workers.ranking.pipeline import ranking_settings

    device = ranking_settings()["device"]
    for kind in kinds:
        load_annotator(kind=kind, device=device)
    logger.warning("ranking preloaded: %s on %s", ", ".join(kinds), device)


# Resumable: a run killed mid-way is redelivered and resumes from its last committed chunk.
@job_task(name=task_names.RANKING_RUN, hours=12, soft_margin_seconds=120, transient_retries=3, bind=True)
def ranking_run_task(self, run_id: int) -> str:
    """Execute or resume RankingRun `run_id`; returns its final status (a finished run is left alone).

    The task id claims the run: a duplicate of it (queued again by the sweep) does nothing while this one
    makes progress (annotator.ranking.services.lifecycle.run_claim).
    """
    from workers.ranking.pipeline import ranking_run_execute

    return ranking_run_execute(run_id, task_id=None if self.request.is_eager else self.request.id)


# One shard of a run's top-K work; any `gpu` worker takes it. Redelivered when its worker dies (acks_late)
# and resumed at its first uncommitted chunk; a duplicate does nothing while the first one makes progress.
@job_task(name=task_names.RANKING_SHARD, hours=6, soft_margin_seconds=120, transient_retries=3, bind=True)
def ranking_shard_task(self, shard_id: int) -> str:
    """Rank (or resume) RankingShard `shard_id`; returns its status. The last shard done finishes the run."""
    from workers.ranking.pipeline import ranking_shard_execute

    return ranking_shard_execute(shard_id, task_id=None if self.request.is_eager else self.request.id)
