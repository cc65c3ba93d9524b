"""Crisscrossed Captions' Table 5 for a model: its similarity scores of CxC's rated pairs against the
people's ratings, by CxC's bootstrap Spearman's r (annotator.analysis.cxc_table5), from a command, the
research pages and the API.

The ratings are the released test files themselves (`manage.py evaluate --cxc --ratings FILE`) or a label
set imported from them (its stored agg_scores). Against a label set the result can be stored as an
Evaluation, keyed by the set, the scores and the bootstrap settings, and scored by the evaluation task, so
it joins the set's leaderboard as the `cxc_spearman` column.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from django.conf import settings as django_settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction

from annotator.analysis.cxc_table5 import TASK_TITLES, ratings_csv_read, scores_csv_read, table5
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.queue import enqueue_on_commit
from annotator.labels.models.labelsets import LabelSet
from annotator.labels.services.labelsets.readers import decode
from annotator.research.models.research import Evaluation
from annotator.research.selectors.cxc_table5 import labelset_cxc_ratings

PROTOCOL = "cxc_table5"
KEY_VERSION = "cxc-table5-1"
MAX_SAMPLES = 10_000


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


def is_cxc_evaluation(evaluation: Evaluation) -> bool:
    return (evaluation.settings or {}).get("protocol") == PROTOCOL


def cxc_evaluation_results(*, evaluation: Evaluation) -> dict:
    """The stored results of a Table 5 evaluation: the table, and its r per task as the leaderboard's
    `cxc_spearman` metric (value, and the 95% interval of the samples) in the task's direction."""
    with evaluation.rankings_file.open("rb") as handle:
        scores = _scores_from_json(json.loads(handle.read()))
    table = labelset_cxc_table5(
        label_set=evaluation.label_set,
        scores=scores,
        samples=evaluation.settings["resamples"],
        seed=evaluation.settings["seed"],
    )
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
