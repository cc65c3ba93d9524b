"""Crisscrossed Captions' Table 5 for a model: its similarity scores of CxC's rated pairs against the
people's ratings, by CxC's bootstrap Spearman's r (annotator.analysis.cxc_table5), from a command, the
research pages and the API.

The ratings are the released test files themselves (`manage.py evaluate --cxc --ratings FILE`) or a label
set imported from them (its stored agg_scores). Against a label set the result can be stored as an
Evaluation, keyed by the set, the scores and the bootstrap settings, and scored by the evaluation task, so
it joins the set's leaderboard as the `cxc_spearman` column.

The scores are the model's own (uploaded CSVs) or computed by one of Vericap's machine annotators: then the
Evaluation is keyed by the annotator's kind instead of the scores, and a task on the `gpu` queue
(workers.tasks.evaluations.cxc_annotator_scores_task) embeds the rated items, stores the scores as the file
an upload would have given (cxc_annotator_scores_claim / _store / _fail) and scores them like an upload.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from django.conf import settings as django_settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.analysis.cxc_table5 import PROTOCOL, TASK_TITLES, ratings_csv_read, scores_csv_read, table5
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_long_on_commit, enqueue_on_commit
from annotator.labels.models.labelsets import LabelSet
from annotator.labels.services.labelsets.readers import decode
from annotator.ranking.services.kinds import CHECKPOINT_KINDS, rankable_kinds, registrable_kinds
from annotator.research.models.research import EVALUATION_TRANSITIONS, Evaluation, EvaluationStatus
from annotator.research.selectors.cxc_table5 import labelset_cxc_ratings, labelset_has_cxc_ratings

KEY_VERSION = "cxc-table5-1"
MAX_SAMPLES = 10_000
FINISHED = (EvaluationStatus.SUCCEEDED, EvaluationStatus.FAILED)


def cxc_samples_check(samples: int | None) -> int:
    samples = django_settings.EVALUATION_RESAMPLES if samples is None else samples
    if not 1 <= samples <= MAX_SAMPLES:
        raise ApplicationError(f"Bootstrap samples must be between 1 and {MAX_SAMPLES:,}.")
    return samples


def cxc_scores_read(files: Sequence[tuple[str, bytes | str]]) -> dict[str, dict]:
    """{task: {(first, second): score}} of one scores file per task; a 400 naming the file for a bad one."""
    scores: dict[str, dict] = {}
    for name, content in files:
        try:
            task, pairs = scores_csv_read(decode(content, what=f"scores file {name}"))
        except ValueError as error:
            raise ApplicationError(f"{name}: {error}") from None
        if task in scores:
            raise ApplicationError(f"Two scores files are for {TASK_TITLES[task]}; give one per task.")
        scores[task] = pairs
    if not scores:
        raise ApplicationError("Give the model's scores: a CSV per task with the pair's two id columns and score.")
    return scores


def cxc_ratings_read(files: Sequence[tuple[str, bytes | str]]) -> dict[str, list]:
    """{task: [(first, second, agg_score)]} of released CxC test files (sits_test.csv, sts_test.csv, ...)."""
    ratings: dict[str, list] = {}
    for name, content in files:
        try:
            task, rows = ratings_csv_read(decode(content, what=f"ratings file {name}"))
        except ValueError as error:
            raise ApplicationError(f"{name}: {error}") from None
        if task in ratings:
            raise ApplicationError(f"Two ratings files are for {TASK_TITLES[task]}; give one per task.")
        ratings[task] = rows
    return ratings


def cxc_table5_evaluate(*, ratings: dict, scores: dict, samples: int | None = None, seed: int = 0) -> dict:
    """Table 5 of `scores` against `ratings` (see annotator.analysis.cxc_table5.table5). Read-only; a 400
    when no task has both."""
    result = table5(ratings, scores, samples=cxc_samples_check(samples), seed=seed)
    if not result["tasks"]:
        raise ApplicationError(
            "No task has both ratings and scores: "
            + "; ".join(result["notes"] or ["the ratings have no 0-5 scored pairs"])
        )
    return result


def labelset_cxc_table5(*, label_set: LabelSet, scores: dict, samples: int | None = None, seed: int = 0) -> dict:
    """Table 5 of `scores` against a label set's rated pairs (a 400 when the set has no 0-5 scores)."""
    ratings = labelset_cxc_ratings(label_set=label_set)
    if not ratings:
        raise ApplicationError(f"Label set {label_set.label} has no 0-5 ratings (import a CxC file).")
    return cxc_table5_evaluate(ratings=ratings, scores=scores, samples=samples, seed=seed)


def _scores_json(scores: dict) -> dict:
    return {
        task: sorted([first, second, value] for (first, second), value in pairs.items())
        for task, pairs in scores.items()
    }


def _scores_from_json(data: dict) -> dict:
    return {task: {(first, second): value for first, second, value in rows} for task, rows in data.items()}


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def cxc_evaluation_request(
    *, label_set: LabelSet, user, name: str, scores: dict, samples: int | None = None, seed: int = 0
) -> tuple[Evaluation, bool]:
    """Store Table 5 of `scores` on `label_set` as an Evaluation scored by the evaluation task: the stored
    one when the same set, scores and settings were asked for before (created False). The caller checked
    that `user` may read the set. Idempotent by its key (a unique constraint), as evaluation_request."""
    name = (name or "").strip()
    if not name:
        raise ApplicationError("Give the model a name, so its results can be told apart.")
    settings = {"protocol": PROTOCOL, "resamples": cxc_samples_check(samples), "seed": seed}
    if not labelset_cxc_ratings(label_set=label_set):
        raise ApplicationError(f"Label set {label_set.label} has no 0-5 ratings (import a CxC file).")
    stored = _scores_json(scores)
    scores_digest = _digest(stored)
    key = _digest([KEY_VERSION, f"labelset:{label_set.pk}", scores_digest, settings])
    existing = Evaluation.objects.filter(key=key).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            evaluation = Evaluation(
                label_set=label_set,
                created_by=user,
                name=name[:200],
                key=key,
                rankings_sha256=scores_digest,
                settings=settings,
                results={},
            )
            evaluation.full_clean(exclude=["rankings_file", "key"])
            evaluation.rankings_file.save(
                f"rankings/labelset-{label_set.pk}/cxc-{scores_digest}.json",
                ContentFile(json.dumps(stored, separators=(",", ":")).encode()),
                save=False,
            )
            evaluation.save()
            enqueue_on_commit(task_names.EVALUATION_RUN, evaluation.pk)
    except IntegrityError:
        return Evaluation.objects.get(key=key), False
    return evaluation, True


def cxc_annotator_kinds() -> tuple[str, ...]:
    """The machine-annotator kinds that can compute CxC scores here: those a ranking run executes that bring
    their own weights (minilm_pivot, tfidf_pivot, visual, installed plugins), as `manage.py rank` registers
    them without a checkpoint. A kind that loads a checkpoint the caller names (clip, ...) is left out:
    score the pairs with it (`manage.py cxc_annotator_scores`) and upload the scores."""
    return tuple(kind for kind in rankable_kinds() if kind not in CHECKPOINT_KINDS)


def cxc_annotator_kind_check(kind: str | None) -> str:
    """`kind` when it is one of cxc_annotator_kinds(), else a 400 that says which kinds are."""
    kind = (kind or "").strip()
    kinds = cxc_annotator_kinds()
    if kind in kinds:
        return kind
    offered = ", ".join(kinds)
    if kind in registrable_kinds():
        raise ApplicationError(
            f"The {kind} annotator loads a checkpoint you name, so it cannot compute CxC scores here; score the "
            f"pairs with it and upload the scores, or choose one of {offered}."
        )
    raise ApplicationError(f"Unknown annotator kind {kind!r}; CxC scores can be computed by {offered}.")


def cxc_annotator_progress(evaluation: Evaluation) -> dict:
    """While an annotator's scores are computed, `results` holds only {"progress": {"queued_at",
    "started_at"}} (ISO times): when it was last queued and when a worker last took it (the jobs lifecycle's
    sign of life; the Evaluation row has no heartbeat column). Scoring replaces it with the results."""
    return dict((evaluation.results or {}).get("progress", {}))


def cxc_annotator_evaluation_request(
    *, label_set: LabelSet, user, kind: str, name: str = "", samples: int | None = None, seed: int = 0
) -> tuple[Evaluation, bool]:
    """Table 5 of machine annotator `kind`'s similarity of the set's rated pairs, stored as an Evaluation
    (named `name`, default the kind) whose scores task (CXC_ANNOTATOR_SCORES, the `gpu` queue) computes the
    scores and then scores them. Computing embeds the dataset: long work, so a request hands it to the
    background (enqueue_long_on_commit) and answers with the queued evaluation; a command finds it done at
    commit on the embedded default. The caller checked that `user` may read the set.

    Keyed by the set, the kind and the bootstrap settings (a unique constraint): the same request again
    gives the stored evaluation (created False); a failed one is queued again (under SELECT ... FOR UPDATE
    on its row)."""
    kind = cxc_annotator_kind_check(kind)
    name = (name or "").strip() or kind
    settings = {"protocol": PROTOCOL, "resamples": cxc_samples_check(samples), "seed": seed, "annotator_kind": kind}
    if not labelset_has_cxc_ratings(label_set=label_set):
        raise ApplicationError(f"Label set {label_set.label} has no 0-5 ratings (import a CxC file).")
    key = _digest([KEY_VERSION, f"labelset:{label_set.pk}", f"annotator:{kind}", settings])
    existing = Evaluation.objects.filter(key=key).first()
    if existing is not None:
        if existing.status == EvaluationStatus.FAILED:
            existing = cxc_annotator_evaluation_retry(evaluation=existing)
        return existing, False
    try:
        with transaction.atomic():
            evaluation = Evaluation(
                label_set=label_set,
                created_by=user,
                name=name[:200],
                key=key,
                settings=settings,
                results={"progress": {"queued_at": timezone.now().isoformat()}},
            )
            evaluation.full_clean(exclude=["rankings_file", "key"])
            evaluation.save()
            enqueue_long_on_commit(task_names.CXC_ANNOTATOR_SCORES, evaluation.pk)
    except IntegrityError:
        return Evaluation.objects.get(key=key), False
    return evaluation, True


def cxc_annotator_evaluation_retry(*, evaluation: Evaluation) -> Evaluation:
    """Queue an annotator's Table 5 evaluation again: a failed one moves to queued (its error cleared); a
    queued or running one (the caller judged it stalled: its worker died, its message was lost) keeps its
    status and its task's claim takes it over. A succeeded one is left alone. Takes SELECT ... FOR UPDATE on
    the Evaluation row; enqueues after commit (in the background when a request retries it)."""
    with transaction.atomic():
        locked = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
        if locked.status == EvaluationStatus.SUCCEEDED or not (locked.settings or {}).get("annotator_kind"):
            return locked
        if locked.status == EvaluationStatus.FAILED:
            check_transition(
                transitions=EVALUATION_TRANSITIONS,
                current=locked.status,
                target=EvaluationStatus.QUEUED,
                what="evaluation",
            )
            locked.status, locked.error, locked.finished_at = EvaluationStatus.QUEUED, "", None
        locked.results = {"progress": {"queued_at": timezone.now().isoformat()}}
        locked.save(update_fields=["status", "error", "finished_at", "results"])
        enqueue_long_on_commit(task_names.CXC_ANNOTATOR_SCORES, locked.pk)
    evaluation.refresh_from_db()
    return evaluation


def cxc_annotator_scores_claim(*, evaluation_id: int) -> dict | None:
    """What the scores task computes, {"label_set": LabelSet, "kind": str}, with the evaluation moved to
    running; None when there is nothing to compute: it is finished, or its scores are stored already (the
    task then only scores them). Takes SELECT ... FOR UPDATE on the Evaluation row to move its status; a
    redelivered task for an evaluation left running computes again (the first stored scores are kept)."""
    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().get(pk=evaluation_id)
        kind = (evaluation.settings or {}).get("annotator_kind")
        if not kind or evaluation.rankings_file or evaluation.status in FINISHED:
            return None
        check_transition(
            transitions=EVALUATION_TRANSITIONS,
            current=evaluation.status,
            target=EvaluationStatus.RUNNING,
            what="evaluation",
        )
        evaluation.status = EvaluationStatus.RUNNING
        progress = dict((evaluation.results or {}).get("progress", {}))
        evaluation.results = {"progress": {**progress, "started_at": timezone.now().isoformat()}}
        evaluation.save(update_fields=["status", "results"])
    return {"label_set": evaluation.label_set, "kind": kind}


def cxc_annotator_scores_store(*, evaluation_id: int, scores: dict) -> Evaluation:
    """Keep the annotator's computed scores ({task: {(first, second): score}}) as the evaluation's scores
    file, the one an upload of them would have stored. Takes SELECT ... FOR UPDATE on the row; an evaluation
    that has its scores already keeps them."""
    stored = _scores_json(scores)
    digest = _digest(stored)
    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().get(pk=evaluation_id)
        if evaluation.rankings_file:
            return evaluation
        evaluation.rankings_file.save(
            f"rankings/labelset-{evaluation.label_set_id}/cxc-{digest}.json",
            ContentFile(json.dumps(stored, separators=(",", ":")).encode()),
            save=False,
        )
        evaluation.rankings_sha256 = digest
        evaluation.save(update_fields=["rankings_file", "rankings_sha256"])
    return evaluation


def cxc_annotator_scores_fail(*, evaluation_id: int, message: str) -> Evaluation:
    """Record that the annotator could not compute the scores (the person sees `message`; asking again
    queues it again). Takes SELECT ... FOR UPDATE on the row; a finished evaluation is left alone."""
    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().get(pk=evaluation_id)
        if evaluation.status in FINISHED:
            return evaluation
        check_transition(
            transitions=EVALUATION_TRANSITIONS,
            current=evaluation.status,
            target=EvaluationStatus.FAILED,
            what="evaluation",
        )
        evaluation.status, evaluation.error, evaluation.finished_at = (
            EvaluationStatus.FAILED,
            message[:2000],
            timezone.now(),
        )
        evaluation.save(update_fields=["status", "error", "finished_at"])
    return evaluation


def is_cxc_evaluation(evaluation: Evaluation) -> bool:
    return (evaluation.settings or {}).get("protocol") == PROTOCOL


def cxc_evaluation_results(*, evaluation: Evaluation) -> dict:
    """The stored results of a Table 5 evaluation: the table, and its r per task as the leaderboard's
    `cxc_spearman` metric (value, and the 95% interval of the samples) in the task's direction."""
    if not evaluation.rankings_file:
        raise ApplicationError(f"Evaluation {evaluation.pk} has no scores yet: its annotator has not computed them.")
    with evaluation.rankings_file.open("rb") as handle:
        scores = _scores_from_json(json.loads(handle.read()))
    table = labelset_cxc_table5(
        label_set=evaluation.label_set,
        scores=scores,
        samples=evaluation.settings["resamples"],
        seed=evaluation.settings["seed"],
    )
    if (evaluation.settings or {}).get("annotator_kind"):
        table["annotator"] = evaluation.settings["annotator_kind"]
    metrics, protocols = {}, {}
    for entry in table["tasks"].values():
        metrics[entry["direction"]] = {
            "cxc_spearman": {"value": entry["spearman"], "low": entry["low"], "high": entry["high"], "sd": entry["sd"]}
        }
        protocols[entry["direction"]] = {
            "cxc": {
                key: entry[key] for key in ("samples", "queries", "pairs_rated", "pairs_scored", "pairs_missing_score")
            }
        }
    notes = table["notes"] + [entry["note"] for entry in table["tasks"].values() if "note" in entry]
    return {"cxc": table, "metrics": metrics, "protocols": protocols, "notes": notes, "warnings": []}
