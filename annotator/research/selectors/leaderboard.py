"""Reads of the leaderboard: the finished evaluations of one set of labels, as rows, CSV and JSON.

A board's labels are a campaign's aggregated labels of one method and one variant (lenient or strict):
the evaluations against them are comparable, row by row (a label set's board is its own). The stability
table compares the model orders of every such set of labels over the same dataset that the caller may read.
"""

from __future__ import annotations

import io
from collections import defaultdict

from django.db.models import Q

from annotator.analysis.cxc_table5 import PROTOCOL as CXC_PROTOCOL
from annotator.analysis.leaderboard import board, chart, stability
from annotator.analysis.scorecard import DIRECTIONS, METRIC_TITLES, METRICS
from annotator.campaigns.models.campaign import Campaign
from annotator.core.csvsafe import csv_writer
from annotator.core.errors import ApplicationError
from annotator.labels.models.exports import ExportVariant
from annotator.labels.models.labelsets import LabelSet
from annotator.research.models.research import Evaluation, EvaluationStatus
from annotator.research.selectors.access import evaluations_visible_to


def _finished(*, user):
    return evaluations_visible_to(user).filter(status=EvaluationStatus.SUCCEEDED)


def target_label(evaluation: Evaluation) -> str:
    """How a set of labels is named on a board: `campaign · method · variant`, or the set's `name@version`."""
    if evaluation.label_set_id is not None:
        return f"label set {evaluation.label_set.label}"
    return f"{evaluation.campaign.name} · {evaluation.method} · {evaluation.variant}"


def leaderboard_targets(*, user) -> list[dict]:
    """Every set of labels the caller may read with at least one finished evaluation, with its count."""
    counts: dict[tuple, int] = defaultdict(int)
    first: dict[tuple, Evaluation] = {}
    rows = _finished(user=user).select_related("campaign__dataset", "label_set__dataset").order_by("id")
    for evaluation in rows:
        key = (evaluation.label_set_id or 0, evaluation.campaign_id or 0, evaluation.method, evaluation.variant)
        counts[key] += 1
        first.setdefault(key, evaluation)
    targets = []
    for key in sorted(counts):
        evaluation = first[key]
        targets.append(
            {
                "campaign": evaluation.campaign,
                "label_set": evaluation.label_set,
                "dataset": (evaluation.campaign or evaluation.label_set).dataset,
                "label": target_label(evaluation),
                "method": evaluation.method,
                "variant": evaluation.variant,
                "models": counts[key],
            }
        )
    return targets


def _source(evaluation: Evaluation) -> str:
    if evaluation.ranking_run_id:
        return f"run {evaluation.ranking_run_id}"
    settings = evaluation.settings or {}
    if settings.get("protocol") == CXC_PROTOCOL:
        kind = settings.get("annotator_kind")
        return f"CxC scores computed by {kind}" if kind else "uploaded CxC scores"
    return "uploaded rankings"


def _entry(evaluation: Evaluation, direction: str) -> dict:
    metrics = (evaluation.results or {}).get("metrics", {}).get(direction, {})
    labels = (evaluation.results or {}).get("protocols", {}).get(direction, {}).get("labels", {})
    return {
        "self_matches_dropped": labels.get("self_matches_dropped", 0),
        "id": evaluation.pk,
        "name": evaluation.name,
        "biased": evaluation.biased,
        "source": _source(evaluation),
        "metrics": metrics,
    }


def _of_target(queryset, *, campaign: Campaign | None, label_set: LabelSet | None, method: str, variant: str):
    if label_set is not None:
        return queryset.filter(label_set=label_set)
    return queryset.filter(campaign=campaign, method=method, variant=variant)


def leaderboard(
    *,
    user,
    campaign: Campaign | None = None,
    label_set: LabelSet | None = None,
    method: str = "",
    variant: str = ExportVariant.LENIENT,
    direction: str = "i2t",
    sort: str | None = None,
    descending: bool | None = None,
) -> dict:
    """The board of a label set, or of one campaign's labels (method, variant), in one direction: its tau
    matrix, a chart of the sorted metric with intervals, and the stability of the sorted metric's model
    order across the other label sets of the same dataset."""
    if (campaign is None) == (label_set is None):
        raise ApplicationError("A leaderboard is of a campaign's labels or of a label set.")
    if direction not in DIRECTIONS:
        raise ApplicationError(f"Unknown direction {direction!r}.", extra={"allowed": list(DIRECTIONS)})
    if variant not in ExportVariant.values:
        raise ApplicationError(f"Unknown variant {variant!r}.", extra={"allowed": list(ExportVariant.values)})
    evaluations = list(
        _of_target(_finished(user=user), campaign=campaign, label_set=label_set, method=method, variant=variant)
    )
    entries = [_entry(evaluation, direction) for evaluation in evaluations]
    entries = [entry for entry in entries if entry["metrics"]]
    result = board(entries, sort=sort, descending=descending)
    result.update(
        {
            "campaign": campaign,
            "label_set": label_set,
            "dataset": (campaign or label_set).dataset,
            "title": f"label set {label_set.label}" if label_set is not None else campaign.name,
            "method": method,
            "variant": variant,
            "direction": direction,
            "directions": sorted(
                {d for evaluation in evaluations for d in (evaluation.results or {}).get("metrics", {})},
                key=DIRECTIONS.index,
            ),
            "chart": chart(result["rows"], result["sort"]) if result["sort"] else None,
            "stability": _stability(
                user=user, dataset_id=(campaign or label_set).dataset_id, direction=direction, metric=result["sort"]
            ),
        }
    )
    return result


def _stability(*, user, dataset_id: int, direction: str, metric: str | None) -> dict | None:
    if metric is None:
        return None
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    rows = (
        _finished(user=user)
        .filter(Q(campaign__dataset_id=dataset_id) | Q(label_set__dataset_id=dataset_id))
        .order_by("created_at", "id")
    )
    for evaluation in rows:
        cell = (evaluation.results or {}).get("metrics", {}).get(direction, {}).get(metric)
        if cell and cell.get("value") is not None:
            scores[target_label(evaluation)][evaluation.name] = cell["value"]  # the latest of a name counts
    if len(scores) < 2:
        return None
    result = stability(scores)
    result["metric"] = METRIC_TITLES.get(metric, metric)
    return result


def leaderboard_json(result: dict) -> dict:
    """The board as JSON: columns, rows with every cell and interval, the tau matrix and the stability."""
    return {
        "campaign": result["campaign"].pk if result["campaign"] else None,
        "label_set": result["label_set"].pk if result["label_set"] else None,
        "method": result["method"],
        "variant": result["variant"],
        "direction": result["direction"],
        "sort": result["sort"],
        "descending": result["descending"],
        "columns": result["columns"],
        "rows": [
            {
                "place": row["place"],
                "evaluation": row["id"],
                "name": row["name"],
                "biased": row["biased"],
                "source": row["source"],
                "metrics": {column["key"]: cell for column, cell in zip(result["columns"], row["cells"], strict=True)},
            }
            for row in result["rows"]
        ],
        "kendall_tau": {
            row["key"]: dict(zip([c["key"] for c in result["columns"]], row["values"], strict=True))
            for row in result["tau"]
        },
        "stability": result["stability"],
    }


CSV_HEADER_KEYS = [key for key, _, _, _ in METRICS]


def evaluations_csv(evaluations: list[Evaluation]) -> str:
    """One row per evaluation and direction: model, labels, bias, then value, low and high of every metric."""
    out = io.StringIO()
    writer = csv_writer(out)
    header = ["evaluation", "model", "campaign", "label_set", "method", "variant", "biased", "direction"]
    for key in CSV_HEADER_KEYS:
        header += [key, f"{key}_low", f"{key}_high"]
    writer.writerow(header)
    for evaluation in evaluations:
        for direction, metrics in (evaluation.results or {}).get("metrics", {}).items():
            row = [
                evaluation.pk,
                evaluation.name,
                evaluation.campaign_id or "",
                evaluation.label_set_id or "",
                evaluation.method,
                evaluation.variant,
                "yes" if evaluation.biased else "no",
                direction,
            ]
            for key in CSV_HEADER_KEYS:
                cell = metrics.get(key) or {}
                row += [_csv_number(cell.get("value")), _csv_number(cell.get("low")), _csv_number(cell.get("high"))]
            writer.writerow(row)
    return out.getvalue()


def _csv_number(value) -> str:
    return "" if value is None else repr(float(value))


def leaderboard_evaluations(
    *, user, campaign: Campaign | None = None, label_set: LabelSet | None = None, method: str = "", variant: str = ""
) -> list[Evaluation]:
    rows = _of_target(_finished(user=user), campaign=campaign, label_set=label_set, method=method, variant=variant)
    return list(rows.order_by("name", "id"))
