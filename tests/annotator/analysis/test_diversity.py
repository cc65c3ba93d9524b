"""Annotator diversity (ECCV Table A.1): tau-b on partially overlapping top-k lists, average top-1 rank."""

import numpy as np
import pytest
from scipy import stats

from annotator.analysis.diversity import diversity_matrices, kendall_tau_topk, top1_rank


def reference_tau(a, b, k):
    """The documented definition, spelled out item by item, computed by scipy's tau-b."""
    union = list(a) + [item for item in b if item not in a]
    ranks_a = [a.index(item) + 1 if item in a else k + 1 for item in union]
    ranks_b = [b.index(item) + 1 if item in b else k + 1 for item in union]
    return stats.kendalltau(ranks_a, ranks_b, variant="b").statistic


def test_tau_matches_scipy_tau_b_on_the_union_with_placeholder_ranks():
    rng = np.random.default_rng(1)
    lists_a = [list(rng.permutation(40)[:25]) for _ in range(30)]
    lists_b = [list(rng.permutation(40)[:25]) for _ in range(30)]
    values = kendall_tau_topk(lists_a, lists_b, k=25)
    expected = [reference_tau(a, b, 25) for a, b in zip(lists_a, lists_b, strict=False)]
    np.testing.assert_allclose(values, expected, atol=1e-12)


def test_tau_extremes_identical_reversed_and_disjoint():
    same = list(range(25))
    values = kendall_tau_topk([same, same, same], [same, same[::-1], list(range(100, 125))], k=25)
    assert values[0] == pytest.approx(1.0)
    assert values[1] == pytest.approx(-1.0)
    assert values[2] < -0.6  # each list ranks its own items above all of the other's
    assert np.isnan(kendall_tau_topk([[7]], [[7]], k=25)[0])  # a single item: undefined, left out


def test_top1_rank_counts_absent_items_as_k_plus_one():
    ranks, found = top1_rank([[5, 1], [9, 2], [3]], [[1, 5], [1, 2], [4]], k=25)
    assert ranks.tolist() == [2.0, 26.0, 26.0]
    assert found.tolist() == [True, False, False]


def test_diversity_matrices_are_symmetric_for_tau_and_directed_for_rank():
    a = [[1, 2, 3], [4, 5, 6]]
    b = [[2, 1, 3], [4, 6, 5]]
    c = [[9, 8, 7], [6, 5, 4]]
    result = diversity_matrices([a, b, c], k=3)
    assert result["queries"] == 2
    assert result["tau"][0][1] == result["tau"][1][0] > result["tau"][0][2]
    assert result["tau"][0][0] is None
    assert result["avg_rank"][0][1] == pytest.approx((2 + 1) / 2)
    assert result["avg_rank"][0][2] == pytest.approx((4 + 3) / 2)  # 1 is absent from c (k+1=4), 4 is third
    assert result["found"][0][2] == pytest.approx(0.5)
