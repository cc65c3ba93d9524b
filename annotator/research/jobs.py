"""An annotator's Crisscrossed Captions scores as a job of the shared lifecycle (annotator.core.jobs): the
progress widget on a CxC label set's page follows the evaluation while a worker computes and scores them,
and Retry queues a failed or stalled one again. Other evaluations (uploaded scores or rankings) are no job
here: they are scored in seconds."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.urls import reverse

from annotator.core.jobs import JobKind, JobState, job_kind_register, job_state, latest_moment, queued_stale_after
from annotator.research.models.research import EVALUATION_TRANSITIONS, Evaluation
from annotator.research.selectors.access import evaluations_visible_to
from annotator.research.services.cxc_table5 import cxc_annotator_evaluation_retry, cxc_annotator_progress

# A running computation writes nothing until it ends (one pass over the dataset's embeddings); it counts as
# stalled only past the hard time limit of its task (workers.tasks.evaluations.cxc_annotator_scores_task).
RUNNING_STALE_AFTER = timedelta(hours=6)


def is_annotator_evaluation(evaluation: Evaluation) -> bool:
    return bool((evaluation.settings or {}).get("annotator_kind"))


class CxcAnnotatorScoresKind(JobKind):
    name, label, model, transitions = "cxc-scores", "CxC scores", Evaluation, EVALUATION_TRANSITIONS

    def state(self, evaluation):
        return super().state(evaluation) if is_annotator_evaluation(evaluation) else None

    def retry(self, job):
        if job_state(job) not in (JobState.FAILED, JobState.STALLED):
            return job
        return cxc_annotator_evaluation_retry(evaluation=job)

    def last_alive(self, evaluation):
        progress = cxc_annotator_progress(evaluation)
        moments = [datetime.fromisoformat(progress[key]) for key in ("queued_at", "started_at") if progress.get(key)]
        return latest_moment(evaluation.created_at, *moments)

    def stale_after(self, state):
        return queued_stale_after() if state == JobState.QUEUED else RUNNING_STALE_AFTER

    def progress(self, evaluation):
        return int(self.state(evaluation) == JobState.DONE), 1, "evaluation"

    def page(self, evaluation):
        return reverse("labelset-detail", args=[evaluation.label_set_id]) + "#cxc-table5"

    def visible(self, user):
        return evaluations_visible_to(user).filter(settings__annotator_kind__isnull=False)

    def may_retry(self, user, evaluation):
        return True  # whoever reads the set may ask for the evaluation again


job_kind_register(CxcAnnotatorScoresKind())
