"""Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"), pure numpy.

alpha = 1 - D_o / D_e from the coincidence matrix: every unit (a pair) with m >= 2 values adds, for each
ordered couple of values from different coders, 1 / (m - 1) to o[c, k]. Units with fewer than two values
are not pairable and do not count. Metrics: `nominal`, `ordinal` (ranks by the values' order: the four
answers from "100% NO" to "100% YES") and `interval` (squared differences: the 0-5 similarity scale).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

# The four answers on an ordinal scale, from least to most positive.
ORDINAL_CHOICES = {"no": 0, "mostly_no": 1, "partially_yes": 2, "yes": 3}


def _distance(values: np.ndarray, totals: np.ndarray, metric: str) -> np.ndarray:
    if metric == "nominal":
        return 1.0 - np.eye(len(values))
    if metric == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if metric == "ordinal":
        cumulative = np.cumsum(totals)
        # sum of n_g for g from c to k, minus (n_c + n_k) / 2
        low = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
        high = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
        between = cumulative[high] - np.where(low > 0, cumulative[low - 1], 0.0)
        return (between - (totals[:, None] + totals[None, :]) / 2.0) ** 2
    raise ValueError(f"unknown metric {metric!r}")


def krippendorff_alpha(ratings, *, metric: str = "ordinal") -> float | None:
    """alpha over (unit, coder, value) triples; None when it is undefined (no pairable unit, or no
    variation at all). A coder's second value for the same unit replaces the first."""
    by_unit: dict = defaultdict(dict)
    for unit, coder, value in ratings:
        if value is None:
            continue
        by_unit[unit][coder] = float(value)
    units = [list(values.values()) for values in by_unit.values() if len(values) >= 2]
    if not units:
        return None
    domain = np.array(sorted({v for unit in units for v in unit}))
    index = {v: i for i, v in enumerate(domain.tolist())}
    coincidence = np.zeros((len(domain), len(domain)))
    for unit in units:
        m = len(unit)
        counts = np.zeros(len(domain))
        for value in unit:
            counts[index[value]] += 1
        coincidence += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    totals = coincidence.sum(1)
    n = totals.sum()
    delta = _distance(domain, totals, metric)
    observed = (coincidence * delta).sum() / n
    expected = (np.outer(totals, totals) * delta).sum() / (n * (n - 1))
    if expected == 0:
        return None
    return float(1.0 - observed / expected)
