"""Hit rate: share of queries whose top k holds a true target; missing queries count as misses."""

import pytest

from annotator.analysis.hit_rate import hit_rates


def test_hit_rates_at_several_depths():
    ranked = {1: [5, 6, 7], 2: [9, 8], 3: [1]}
    truth = {1: {5}, 2: {8}, 3: {2}, 4: {3}, 5: set()}  # 4 is not ranked; 5 has no positive and is left out
    result = hit_rates(ranked=ranked, truth=truth, ks=(1, 2, 10))
    assert result["queries"] == 4
    assert result["top1"] == pytest.approx(1 / 4)
    assert result["top2"] == pytest.approx(2 / 4)
    assert result["top10"] == pytest.approx(2 / 4)
