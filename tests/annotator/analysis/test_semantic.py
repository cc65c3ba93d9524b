"""Semantic Recall and NCS (seed 002 Eq. 4, 5): a hand example and a brute-force reference."""

import random

import numpy as np
import pytest

from annotator.analysis.semantic import semantic_table, top_targets

TARGETS = {"c0": 0, "c1": 1, "c2": 2, "c3": 3}


def values(table):
    return dict(zip(table.columns, table.values[0], strict=True))


def test_semantic_recall_and_ncs_by_hand():
    """N row [3, 1, 2, 0]; the model retrieves c1, c0, c3."""
    relevance = np.array([[3.0, 1.0, 2.0, 0.0]])
    table = semantic_table({"img": ["c1", "c0", "c3"]}, relevance, {"img": 0}, TARGETS, m=2, ks=(1, 2, 5))
    got = values(table)
    assert got["sr_r1"] == 0.0  # G~(2) = {c0, c2}; Q_1 = {c1}
    assert got["sr_r2"] == 0.5 and got["sr_r5"] == 0.5  # c0 found
    assert got["ncs1"] == 0.0  # G~(1) = {c0}
    assert got["ncs2"] == pytest.approx(3 / 5)  # G~(2) = {c0, c2}: 3 of 3 + 2
    assert got["ncs5"] == pytest.approx(4 / 6)  # every target: c1 + c0 + c3 = 4 of 6


def test_excluding_the_ground_truth_removes_it_from_the_ranking_and_from_the_ideal():
    relevance = np.array([[3.0, 1.0, 2.0, 0.0]])
    table = semantic_table(
        {"img": ["c0", "c1", "c3"]}, relevance, {"img": 0}, TARGETS, m=1, ks=(1, 2), exclude={"img": {"c0"}}
    )
    got = values(table)
    assert got["ncs1"] == 0.0  # ranking is now c1, c3; ideal top 1 is c2
    assert got["ncs2"] == pytest.approx(1 / 3)  # ideal {c2, c1} = 3, retrieved c1 = 1


def test_a_query_whose_relevant_targets_all_score_zero_has_no_ncs():
    table = semantic_table({"img": ["c0"]}, np.zeros((1, 4)), {"img": 0}, TARGETS, m=1, ks=(1,))
    assert np.isnan(table.column("ncs1")[0]) and table.summary()["ncs1"] is None


def test_top_targets_breaks_ties_by_index():
    assert top_targets(np.array([1.0, 2.0, 2.0, 0.0, 2.0]), 2).tolist() == [1, 2]
    assert top_targets(np.array([1.0, 2.0, 2.0, 0.0, 2.0]), 4).tolist() == [1, 2, 4, 0]


@pytest.mark.parametrize("seed", range(4))
def test_semantic_metrics_equal_brute_force(seed):
    rng = random.Random(seed)
    queries, targets = 30, 25
    relevance = np.array([[rng.choice((0.0, 0.5, 1.0, 2.0, 3.5)) for _ in range(targets)] for _ in range(queries)])
    names = [f"t{j}" for j in range(targets)]
    rankings = {f"q{i}": [rng.choice(names + ["unknown"]) for _ in range(rng.randint(0, 12))] for i in range(queries)}
    m = {f"q{i}": rng.randint(1, 6) for i in range(queries)}
    ks = (1, 3, 10)
    table = semantic_table(
        rankings, relevance, {f"q{i}": i for i in range(queries)}, {n: j for j, n in enumerate(names)}, m=m, ks=ks
    )
    for row, query in enumerate(table.queries):
        scores = relevance[int(query[1:])]
        order = sorted(range(targets), key=lambda j: (-scores[j], j))  # value desc, index asc
        got = dict(zip(table.columns, table.values[row], strict=True))
        for k in ks:
            retrieved = {int(item[1:]) for item in rankings[query][:k] if item != "unknown"}
            extended = set(order[: m[query]])
            assert got[f"sr_r{k}"] == pytest.approx(len(extended & retrieved) / len(extended))
            ideal = order[:k]
            denominator = sum(scores[j] for j in ideal)
            expected = sum(scores[j] for j in ideal if j in retrieved) / denominator if denominator else np.nan
            assert got[f"ncs{k}"] == pytest.approx(expected, nan_ok=True)


def test_block_top_targets_equal_a_sort_by_value_then_index():
    from annotator.analysis.semantic import top_targets_block

    rng = np.random.default_rng(3)
    block = rng.integers(0, 4, size=(40, 30)).astype(float)
    block[5, :] = 2.0  # a row of ties only
    block[7, 3] = -np.inf
    indices, values = top_targets_block(block, 12)
    for row in range(len(block)):
        expected = sorted(range(30), key=lambda j: (-block[row, j], j))[:12]
        assert indices[row].tolist() == expected
        assert values[row].tolist() == [block[row, j] for j in expected]
