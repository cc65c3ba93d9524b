"""How sure is a score, and is a ranking of models stable? Bootstrap intervals and Kendall's tau. No ORM.

Bootstrap: the queries are resampled with replacement (`resamples` times, numpy's PCG64 seeded with
`seed`, so the same table and seed give the same interval); each resample's score is computed exactly as
the score itself (mean, or median for `median_rank`); the interval is the percentile interval of the
resampled scores. All metrics of a table share the same resamples, and two models scored on the same
queries with the same seed get the same resamples too (a paired bootstrap): their intervals move together.

A resample is a vector of counts (how often each query was drawn, multinomial), so a mean is one matrix
product and the median a weighted median; memory stays at `CHUNK` resamples x queries.

Kendall's tau-b (with ties, as ECCV Caption Table 5) between two orders of the same models: for each pair
of metrics, over the models both metrics scored. Higher-is-better and lower-is-better metrics (ranks)
are compared by their sense: a rank is negated first so tau = 1 means "the same order of models".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from annotator.analysis.retrieval import QueryTable, derived

RESAMPLES = 1000
CONFIDENCE = 0.95
CHUNK = 100


def resample_counts(queries: int, *, resamples: int = RESAMPLES, seed: int = 0):
    """Yield chunks of bootstrap count vectors (chunk x queries), reproducibly for (queries, seed)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    probabilities = np.full(queries, 1.0 / queries)
    done = 0
    while done < resamples:
        size = min(CHUNK, resamples - done)
        yield rng.multinomial(queries, probabilities, size=size).astype(np.float64)
        done += size


def bootstrap_intervals(
    table: QueryTable, *, resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> dict[str, tuple[float, float] | None]:
    """Percentile interval of every metric of the table (None when a metric has no defined value)."""
    names = table.metric_names()
    n = len(table.queries)
    if n == 0 or resamples <= 0:
        return dict.fromkeys(names)
    draws: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for counts in resample_counts(n, resamples=resamples, seed=seed):
        for name in names:
            draws[name].append(_resampled(table, name, counts))
    alpha = (1.0 - confidence) / 2
    intervals: dict[str, tuple[float, float] | None] = {}
    for name, chunks in draws.items():
        values = np.concatenate(chunks)
        finite = values[~np.isnan(values)]
        if finite.size == 0:
            intervals[name] = None
        else:
            low, high = np.quantile(finite, [alpha, 1.0 - alpha])
            intervals[name] = (float(low), float(high))
    return intervals


def _resampled(table: QueryTable, name: str, counts: np.ndarray) -> np.ndarray:
    """The metric on each resample of a chunk (one per row of `counts`); NaN where nothing is defined."""
    source, kind = derived(name)
    values = table.column(source)
    defined = ~np.isnan(values)
    weights = counts * defined
    totals = weights.sum(axis=1)
    safe = np.where(totals > 0, totals, 1.0)
    if kind == "mean":
        sums = weights @ np.where(defined, values, 0.0)
        return np.where(totals > 0, sums / safe, np.nan)
    # Weighted median, vectorised: the resample sorted is the sorted values each repeated by its count; its
    # middle positions (1-based) are (n+1)//2 and n//2+1, found by a search in the cumulative counts.
    order = np.argsort(np.where(defined, values, np.inf), kind="stable")
    cumulative = np.cumsum(weights[:, order], axis=1)
    n = np.rint(totals)
    low = (cumulative < ((n + 1) // 2)[:, None]).sum(axis=1)
    high = (cumulative < (n // 2 + 1)[:, None]).sum(axis=1)
    last = len(order) - 1
    sorted_values = values[order]
    medians = (sorted_values[np.minimum(low, last)] + sorted_values[np.minimum(high, last)]) / 2
    return np.where(totals > 0, medians, np.nan)


def scores_with_intervals(
    table: QueryTable, *, resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> dict[str, dict]:
    """`{metric: {"value": v, "low": l, "high": h}}` (None where undefined)."""
    summary = table.summary()
    intervals = bootstrap_intervals(table, resamples=resamples, seed=seed, confidence=confidence)
    result = {}
    for name, value in summary.items():
        interval = intervals.get(name)
        result[name] = {
            "value": value,
            "low": interval[0] if interval else None,
            "high": interval[1] if interval else None,
        }
    return result


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two score lists over the same models (None with fewer than two, or no variation)."""
    if len(x) < 2:
        return None
    tau = stats.kendalltau(x, y, variant="b").statistic
    return None if tau is None or np.isnan(tau) else float(tau)


def lower_is_better(name: str) -> bool:
    """Ranks (median rank, mean rank, with any prefix or "direction:" in front) are better when lower."""
    return name.endswith("rank")


def tau_matrix(scores: Mapping[str, Sequence[float | None]]) -> dict[str, dict[str, float | None]]:
    """Kendall's tau-b between the model orders of every pair of columns.

    `scores` maps a column name (a metric, or a label set) to one score per model, in the same model order;
    None marks a model the column did not score (left out of that pair). Ranks (a name ending in `rank`,
    lower is better) are negated first.
    """
    names = list(scores)
    oriented = {
        name: [None if v is None else (-v if lower_is_better(name) else v) for v in values]
        for name, values in scores.items()
    }
    matrix: dict[str, dict[str, float | None]] = {}
    for a in names:
        matrix[a] = {}
        for b in names:
            pairs = [(u, v) for u, v in zip(oriented[a], oriented[b], strict=True) if u is not None and v is not None]
            matrix[a][b] = kendall_tau([u for u, _ in pairs], [v for _, v in pairs]) if pairs else None
    return matrix
