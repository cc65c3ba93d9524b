"""Bootstrap intervals (reproducible, equal to a naive bootstrap) and Kendall's tau-b (brute force)."""

import itertools
import math
import random

import numpy as np
import pytest

from annotator.analysis.retrieval import QueryTable
from annotator.analysis.uncertainty import (
    bootstrap_intervals,
    kendall_tau,
    resample_counts,
    scores_with_intervals,
    tau_matrix,
)


def table(n=200, seed=0):
    rng = np.random.default_rng(seed)
    values = np.column_stack([rng.integers(0, 2, n).astype(float), rng.integers(1, 40, n).astype(float)])
    values[3, 0] = np.nan  # a query where the first metric is undefined
    return QueryTable(queries=[str(i) for i in range(n)], columns=["r1", "rank"], values=values)


def test_intervals_are_reproducible_and_change_with_the_seed():
    first = bootstrap_intervals(table(), seed=7)
    assert first == bootstrap_intervals(table(), seed=7)
    assert first != bootstrap_intervals(table(), seed=8)


def test_intervals_equal_a_naive_bootstrap_over_the_same_draws():
    """Each resample's mean and median as numpy computes them on the explicitly resampled queries."""
    t = table()
    n = len(t.queries)
    draws = {"r1": [], "median_rank": [], "mean_rank": []}
    for counts in resample_counts(n, resamples=300, seed=5):
        for row in counts.astype(int):
            picked = np.repeat(np.arange(n), row)
            r1 = t.values[picked, 0]
            draws["r1"].append(np.nanmean(r1))
            draws["median_rank"].append(np.median(t.values[picked, 1]))
            draws["mean_rank"].append(np.mean(t.values[picked, 1]))
    intervals = bootstrap_intervals(t, resamples=300, seed=5)
    for name, values in draws.items():
        low, high = np.quantile(values, [0.025, 0.975])
        assert intervals[name] == pytest.approx((low, high), abs=1e-12)


def test_the_value_lies_inside_its_interval_and_the_interval_narrows_with_more_queries():
    small = scores_with_intervals(table(100, seed=1))["r1"]
    large = scores_with_intervals(table(10_000, seed=1))["r1"]
    assert small["low"] <= small["value"] <= small["high"]
    assert (large["high"] - large["low"]) < (small["high"] - small["low"]) / 5


def brute_tau_b(x, y):
    concordant = discordant = ties_x = ties_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            ties_x += 1
        elif dy == 0:
            ties_y += 1
        elif dx == dy:
            concordant += 1
        else:
            discordant += 1
    return (concordant - discordant) / math.sqrt(
        (concordant + discordant + ties_x) * (concordant + discordant + ties_y)
    )


@pytest.mark.parametrize("seed", range(5))
def test_kendall_tau_b_equals_brute_force_with_ties(seed):
    rng = random.Random(seed)
    x = [rng.choice((0.1, 0.2, 0.3, 0.4)) for _ in range(12)]
    y = [rng.choice((1, 2, 3, 4, 5)) for _ in range(12)]
    assert kendall_tau(x, y) == pytest.approx(brute_tau_b(x, y))


def test_tau_matrix_orients_ranks_and_skips_unscored_models():
    scores = {"r1": [0.9, 0.5, 0.1, None], "median_rank": [1, 4, 9, 2], "map_at_r": [0.1, 0.5, 0.9, 0.3]}
    matrix = tau_matrix(scores)
    assert matrix["r1"]["median_rank"] == pytest.approx(1.0)  # a lower rank is better: same order as r1
    assert matrix["r1"]["map_at_r"] == pytest.approx(-1.0)
    assert matrix["r1"]["r1"] == pytest.approx(1.0)
    assert kendall_tau([1.0], [2.0]) is None
