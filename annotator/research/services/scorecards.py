"""Stored evaluations of a model against a campaign's labels: keyed requests, the scorecard task.

A stored Evaluation is keyed by what it scored (the graded labels, the dataset's test-set data, the
rankings and the settings): asking again for the same gives the same row. Its full scorecard (every
protocol of annotator.analysis.scorecard, bootstrap intervals) is computed by a Celery task on the
`default` queue, since the CIDEr matrix of a 5K test set takes seconds to minutes. The quick ECCV numbers
(annotator.research.services.evaluation) are stored at once for uploaded rankings.
"""

from __future__ import annotations

import hashlib
import json
import logging

from django.conf import settings as django_settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.analysis.scorecard import Settings, scorecard
from annotator.campaigns.models.campaign import Campaign
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_on_commit
from annotator.labels.models.exports import ExportVariant
from annotator.labels.models.labelsets import LabelSet
from annotator.labels.services.labelsets.readers import rankings_read
from annotator.ranking.models.ranking import MachineAnnotator, RankingRun, RunStatus
from annotator.research.models.research import EVALUATION_TRANSITIONS, Evaluation, EvaluationStatus
from annotator.research.selectors.scorecards import dataset_test_set, run_rankings, test_set_digest
from annotator.research.services.cxc_table5 import cxc_evaluation_results, is_cxc_evaluation
from annotator.research.services.targets import coverage_warnings, evaluation_target

logger = logging.getLogger(__name__)
KEY_VERSION = "scorecard-1"  # change when a metric's definition changes: old keys then no longer match


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def evaluation_settings(*, seed: int = 0, resamples: int | None = None) -> Settings:
    """The scorecard settings of a new evaluation (bootstrap resamples default to EVALUATION_RESAMPLES)."""
    resamples = django_settings.EVALUATION_RESAMPLES if resamples is None else resamples
    if not 0 <= resamples <= 10_000:
        raise ApplicationError("resamples must be between 0 and 10,000.")
    return Settings(resamples=resamples, seed=seed)


def _settings_from_json(data: dict) -> Settings:
    data = dict(data)
    data["pmrp_zetas"] = tuple(data.get("pmrp_zetas", (0,)))
    return Settings(**{key: value for key, value in data.items() if key in Settings.__dataclass_fields__})


def evaluation_request(
    *,
    user,
    name: str,
    campaign: Campaign | None = None,
    label_set: LabelSet | None = None,
    rankings: dict | None = None,
    ranking_run: RankingRun | None = None,
    method: str | None = None,
    variant: str = ExportVariant.LENIENT,
    seed: int = 0,
    resamples: int | None = None,
) -> tuple[Evaluation, bool]:
    """The evaluation of `rankings` (or of a stored ranking run) against a campaign's labels or a label
    set: the stored one when the same labels, test set, rankings and settings were evaluated before
    (created False), else a new one whose scorecard task is enqueued after commit (created True). The
    caller checked that `user` may read the campaign or the set.

    Idempotent by its key (a unique constraint): two concurrent requests for the same evaluation store one
    row; the loser gets the winner's. A failed evaluation asked for again is queued again.
    """
    name = (name or "").strip()
    if not name:
        raise ApplicationError("Give the model a name, so its results can be told apart.")
    if (rankings is None) == (ranking_run is None):
        raise ApplicationError("Evaluate either uploaded rankings or a stored ranking run.")
    target = evaluation_target(
        rankings=rankings or {},
        campaign=campaign,
        label_set=label_set,
        method=method,
        variant=variant,
        model_name=name,
    )
    if ranking_run is not None:
        if ranking_run.dataset_id != target.dataset.pk:
            raise ApplicationError(f"Ranking run {ranking_run.pk} is not over the labels' dataset.")
        if ranking_run.status != RunStatus.SUCCEEDED:
            raise ApplicationError(f"Ranking run {ranking_run.pk} is {ranking_run.status}; evaluate a finished run.")
    settings = evaluation_settings(seed=seed, resamples=resamples)
    rankings_digest = f"run:{ranking_run.pk}" if ranking_run is not None else _digest(rankings)
    labels_identity = f"labelset:{label_set.pk}" if label_set is not None else f"campaign:{campaign.pk}"
    key = _digest(
        [
            KEY_VERSION,
            labels_identity,
            _digest(target.judgements),
            test_set_digest(dataset=target.dataset, removed=target.removed),
            rankings_digest,
            settings.as_json(),
        ]
    )
    existing = Evaluation.objects.filter(key=key).first()
    if existing is not None:
        if existing.status == EvaluationStatus.FAILED:
            _requeue(existing)
        return existing, False
    annotator = (
        ranking_run.annotator if ranking_run is not None else MachineAnnotator.objects.filter(name__iexact=name).first()
    )
    biased = (annotator is not None and annotator.name.lower() in target.builders) or name.lower() in target.builders
    try:
        with transaction.atomic():
            evaluation = Evaluation(
                campaign=campaign,
                label_set=label_set,
                created_by=user,
                name=name[:200],
                variant=target.variant,
                method=target.method,
                key=key,
                rankings_sha256="" if ranking_run is not None else rankings_digest,
                ranking_run=ranking_run,
                annotator=annotator,
                biased=biased,
                settings=settings.as_json(),
                # The quick ECCV numbers of uploaded rankings at once; the task adds (or, for a run, makes) the rest.
                results=target.quick if rankings else {},
            )
            evaluation.full_clean(exclude=["rankings_file", "key"])
            if rankings is not None:
                evaluation.rankings_file.save(
                    f"rankings/{labels_identity.replace(':', '-')}/{rankings_digest}.json",
                    ContentFile(json.dumps(rankings, separators=(",", ":")).encode()),
                    save=False,
                )
            evaluation.save()
            enqueue_on_commit(task_names.EVALUATION_RUN, evaluation.pk)
    except IntegrityError:  # the same evaluation was stored by a concurrent request a moment ago
        return Evaluation.objects.get(key=key), False
    return evaluation, True


def evaluation_create(
    *,
    campaign: Campaign,
    user,
    name: str,
    rankings: dict,
    method: str | None = None,
    variant: str = ExportVariant.LENIENT,
) -> Evaluation:
    """Score `rankings` and store the result (see evaluation_request; this one returns the row only)."""
    evaluation, _ = evaluation_request(
        campaign=campaign, user=user, name=name, rankings=rankings, method=method, variant=variant
    )
    return evaluation


def _requeue(evaluation: Evaluation) -> None:
    with transaction.atomic():
        locked = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
        if locked.status != EvaluationStatus.FAILED:
            return
        check_transition(
            transitions=EVALUATION_TRANSITIONS, current=locked.status, target=EvaluationStatus.QUEUED, what="evaluation"
        )
        locked.status = EvaluationStatus.QUEUED
        locked.error = ""
        locked.save(update_fields=["status", "error"])
        enqueue_on_commit(task_names.EVALUATION_RUN, locked.pk)
    evaluation.refresh_from_db()


def evaluation_rankings(*, evaluation: Evaluation) -> dict:
    """The rankings an evaluation scores: its stored run's candidates or its uploaded file."""
    if evaluation.ranking_run_id is not None:
        return run_rankings(run=evaluation.ranking_run)
    if not evaluation.rankings_file:
        raise ApplicationError(f"Evaluation {evaluation.pk} has neither a rankings file nor a ranking run.")
    with evaluation.rankings_file.open("rb") as handle:
        return rankings_read(raw=handle.read())


def evaluation_scorecard(*, evaluation: Evaluation) -> dict:
    """Every metric of the evaluation's rankings against its labels and their dataset. Read-only."""
    if is_cxc_evaluation(evaluation):  # CxC Table 5: similarity scores of rated pairs, not rankings
        return cxc_evaluation_results(evaluation=evaluation)
    rankings = evaluation_rankings(evaluation=evaluation)
    target = evaluation_target(
        rankings=rankings,
        campaign=evaluation.campaign,
        label_set=evaluation.label_set,
        method=evaluation.method or None,
        variant=evaluation.variant,
        model_name=evaluation.name,
    )
    test_set, notes = dataset_test_set(dataset=target.dataset, removed=target.removed)
    card = scorecard(rankings, target.judgements, test_set=test_set, settings=_settings_from_json(evaluation.settings))
    return {
        **target.quick,
        "metrics": card["metrics"],
        "protocols": card["protocols"],
        "notes": notes + card["notes"],
        # A label set's evaluation warned about its own queries already; the test set's coverage is new.
        "warnings": [warning for warning in target.warnings if warning not in card["notes"]]
        + coverage_warnings(rankings=rankings, labels={} if target.label_set else target.judgements, test_set=test_set),
    }


def evaluation_run(*, evaluation_id: int) -> Evaluation:
    """Compute and store an evaluation's scorecard. Idempotent: a succeeded or failed one is left alone.

    Takes SELECT ... FOR UPDATE on the Evaluation row only to move its status; the scoring happens outside
    that lock. A redelivered task for an evaluation left running scores it again.
    """
    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().get(pk=evaluation_id)
        if evaluation.status in (EvaluationStatus.SUCCEEDED, EvaluationStatus.FAILED):
            return evaluation
        check_transition(
            transitions=EVALUATION_TRANSITIONS,
            current=evaluation.status,
            target=EvaluationStatus.RUNNING,
            what="evaluation",
        )
        evaluation.status = EvaluationStatus.RUNNING
        evaluation.save(update_fields=["status"])
    try:
        results = evaluation_scorecard(evaluation=evaluation)
    except Exception as error:  # recorded for the person, logged for the operator
        logger.exception("Evaluation %s failed", evaluation.pk)
        message = error.message if isinstance(error, ApplicationError) else f"The evaluation failed: {error}"
        evaluation.status = EvaluationStatus.FAILED
        evaluation.error = message[:2000]
        evaluation.finished_at = timezone.now()
        evaluation.save(update_fields=["status", "error", "finished_at"])
        return evaluation
    evaluation.results = results
    evaluation.status = EvaluationStatus.SUCCEEDED
    evaluation.finished_at = timezone.now()
    evaluation.save(update_fields=["results", "status", "finished_at"])
    return evaluation
