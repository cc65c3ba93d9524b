"""Crisscrossed Captions' analyses of rated pairs (numpy and scipy, no ORM).

- The spread of the ratings each pair got: its standard deviation, and their distribution (CxC's appendix
  figure "standard deviation per item", per task).
- How well a model ranks pairs as people do, with CxC's sampled bootstrap (Sec. 4): the pairs of one query
  are correlated, so each sample takes half of the queries and one rated pair of each, Spearman's r is
  computed between the human and the model scores of those pairs, and the estimate is the mean over the
  samples (1000 in CxC).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

SPREAD_BINS = np.round(np.arange(0.0, 2.75, 0.25), 2)  # 0, 0.25, ..., 2.5 (a 0-5 rating's sd is at most 2.5)


def rating_spread(ratings: Mapping[object, Iterable[float]]) -> dict:
    """Per pair the population standard deviation of its ratings; their mean, median and histogram."""
    sds = np.array([float(np.std(np.asarray(list(r), dtype=float))) for r in ratings.values() if len(list(r)) > 0])
    counts, edges = np.histogram(sds, bins=np.append(SPREAD_BINS, np.inf)) if len(sds) else (np.zeros(0), [])
    return {
        "pairs": int(len(sds)),
        "mean_sd": float(sds.mean()) if len(sds) else None,
        "median_sd": float(np.median(sds)) if len(sds) else None,
        "histogram": [
            {"from": float(edges[i]), "to": None if np.isinf(edges[i + 1]) else float(edges[i + 1]), "pairs": int(c)}
            for i, c in enumerate(counts)
        ],
    }


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    from scipy.stats import spearmanr

    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    return float(spearmanr(x, y).statistic)


def bootstrap_spearman(
    rows: Iterable[tuple[object, float, float]], *, samples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict:
    """CxC's sampled bootstrap correlation over (query, human score, model score) rows.

    Each sample draws half of the queries without replacement and one of each drawn query's pairs, and takes
    Spearman's r between the human and the model scores of those pairs. Returns the mean r over the samples
    that could be computed (a sample whose human or model scores are all equal has no r: a constant model
    has none at all), its standard deviation and the central `confidence` interval of the samples (the
    spread of the estimate), the samples used, the queries and the pairs. The same rows (in any order) and
    seed give the same numbers: queries are taken in the order of their text.
    """
    by_query: dict[object, list[tuple[float, float]]] = defaultdict(list)
    for query, human, model in rows:
        by_query[query].append((float(human), float(model)))
    queries = sorted(by_query, key=str)
    counts = np.array([len(by_query[query]) for query in queries], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64) if len(queries) else counts
    flat = [pair for query in queries for pair in by_query[query]]
    human = np.array([pair[0] for pair in flat], dtype=np.float64)
    model = np.array([pair[1] for pair in flat], dtype=np.float64)
    rng = np.random.default_rng(seed)
    half = max(1, len(queries) // 2)
    values = []
    for _ in range(samples if len(queries) >= 3 else 0):
        chosen = rng.choice(len(queries), size=half, replace=False)
        picked = offsets[chosen] + np.minimum((rng.random(half) * counts[chosen]).astype(np.int64), counts[chosen] - 1)
        value = _spearman(human[picked], model[picked])
        if value is not None and np.isfinite(value):
            values.append(value)
    tail = (1.0 - confidence) / 2 * 100
    return {
        "spearman": float(np.mean(values)) if values else None,
        "sd": float(np.std(values)) if values else None,
        "low": float(np.percentile(values, tail)) if values else None,
        "high": float(np.percentile(values, 100 - tail)) if values else None,
        "samples": len(values),
        "queries": len(queries),
        "pairs": int(len(flat)),
    }
