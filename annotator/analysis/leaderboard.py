"""A leaderboard as plain data: models side by side on one set of labels, sorted, with the Kendall tau of
the model orders that the metrics give (ECCV Caption Table 5), and the geometry of a bar chart. No ORM.

An entry is `{"id", "name", "biased", "metrics": {metric: {"value", "low", "high"}}}` for one direction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from annotator.analysis.scorecard import HIGHER_IS_BETTER, METRIC_TITLES, METRICS
from annotator.analysis.uncertainty import tau_matrix

DEFAULT_SORT = ("map_at_r", "r_precision", "r1", "coco5k_r1")


def _value(entry: Mapping, metric: str) -> float | None:
    cell = entry["metrics"].get(metric)
    return None if cell is None else cell.get("value")


def board(entries: Sequence[Mapping], *, sort: str | None = None, descending: bool | None = None) -> dict:
    """Columns (metrics some entry has a value for, in METRICS order), rows sorted by `sort` (models
    without it last, ties by name), and the tau matrix between the columns' model orders."""
    columns = [
        {"key": key, "title": title, "protocol": protocol, "higher_is_better": higher}
        for key, title, protocol, higher in METRICS
        if any(_value(entry, key) is not None for entry in entries)
    ]
    keys = [column["key"] for column in columns]
    if sort not in keys:
        sort = next((key for key in DEFAULT_SORT if key in keys), keys[0] if keys else None)
    if descending is None:
        descending = HIGHER_IS_BETTER.get(sort, True)
    sign = -1 if descending else 1

    def order(entry):
        value = _value(entry, sort) if sort else None
        return (value is None, sign * value if value is not None else 0.0, entry["name"].lower(), entry["id"])

    rows = sorted(entries, key=order)
    for place, row in enumerate(rows, start=1):
        row["place"] = place
        row["cells"] = [row["metrics"].get(key, {"value": None, "low": None, "high": None}) for key in keys]
    tau = tau_matrix({key: [_value(entry, key) for entry in rows] for key in keys}) if len(rows) >= 2 else {}
    return {
        "columns": columns,
        "rows": rows,
        "sort": sort,
        "descending": descending,
        "tau": [
            {"key": key, "title": METRIC_TITLES[key], "values": [tau[key][other] for other in keys]} for key in keys
        ]
        if tau
        else [],
    }


def stability(scores_by_target: Mapping[str, Mapping[str, float | None]]) -> dict:
    """Kendall tau between the model orders of several label sets (or variants) for one metric.

    `scores_by_target` maps a target's label to {model name: value}; models are matched by name and a pair
    of targets is compared over the models both scored. Returns {"targets": [...], "tau": [[...]]}.
    """
    targets = list(scores_by_target)
    models = sorted({name for scores in scores_by_target.values() for name in scores})
    matrix = tau_matrix({target: [scores_by_target[target].get(name) for name in models] for target in targets})
    return {"targets": targets, "models": models, "tau": [[matrix[a][b] for b in targets] for a in targets]}


def chart(rows: Sequence[Mapping], metric: str, *, width: int = 640, bar: int = 22, gap: int = 8, label: int = 180):
    """Horizontal bars of one metric with their intervals, as SVG coordinates (no script, no inline style).

    Scores in [0, 1] use a 0..1 axis; ranks (or anything above 1) use 0..the largest interval end."""
    cells = [(row, row["metrics"].get(metric)) for row in rows]
    cells = [(row, cell) for row, cell in cells if cell and cell.get("value") is not None]
    top = max([1.0] + [cell["high"] or cell["value"] for _, cell in cells] + [cell["value"] for _, cell in cells])
    span = width - label - 60
    bars = []
    for index, (row, cell) in enumerate(cells):
        y = index * (bar + gap)
        low = cell["low"] if cell["low"] is not None else cell["value"]
        high = cell["high"] if cell["high"] is not None else cell["value"]
        bars.append(
            {
                "name": row["name"],
                "biased": row.get("biased", False),
                "y": y,
                "text_y": y + bar * 0.7,
                "mid_y": y + bar / 2,
                "width": round(span * cell["value"] / top, 2),
                "low_x": round(label + span * low / top, 2),
                "high_x": round(label + span * high / top, 2),
                "value_x": round(label + span * max(cell["value"], high) / top + 6, 2),
                "value": cell["value"],
            }
        )
    return {
        "metric": metric,
        "title": METRIC_TITLES.get(metric, metric),
        "width": width,
        "height": max(1, len(bars)) * (bar + gap),
        "label": label,
        "bar": bar,
        "axis_max": top,
        "bars": bars,
    }
