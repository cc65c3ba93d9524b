"""Pure trust statistics (annotator/analysis/trust.py)."""

import pytest

from annotator.analysis.trust import Trust, TrustPolicy, soft_block_reason, wilson_interval


def test_wilson_interval_known_values():
    """Wilson 95% interval of 8/10 is about (0.49, 0.94); no evidence is (0, 1)."""
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.490, abs=0.002) and high == pytest.approx(0.943, abs=0.002)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(10, 10)[1] == 1.0


def test_soft_block_needs_enough_evidence():
    policy = TrustPolicy(min_gold=10, gold_accuracy=0.8)
    assert soft_block_reason(Trust(0, 8, 0, 0, 4), policy) == ""  # bad so far, but only 8 gold answers
    assert "gold accuracy 5/10" in soft_block_reason(Trust(5, 10, 0, 0, 5), policy)
    assert soft_block_reason(Trust(9, 10, 0, 0, 5), policy) == ""


def test_soft_block_on_approval_rate():
    policy = TrustPolicy(min_decided=10, approval_rate=0.5)
    assert "approval rate 1/12" in soft_block_reason(Trust(20, 20, 1, 11, 12), policy)
    assert soft_block_reason(Trust(20, 20, 6, 6, 12), policy) == ""
