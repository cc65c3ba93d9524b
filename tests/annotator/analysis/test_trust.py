"""Pure trust statistics (annotator/analysis/trust.py)."""

import pytest

from annotator.analysis.trust import (
    Trust,
    TrustPolicy,
    is_trusted,
    soft_block_reason,
    spammer_posterior,
    wilson_interval,
)


def test_wilson_interval_known_values():
    """Wilson 95% interval of 8/10 is about (0.49, 0.94); no evidence is (0, 1)."""
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.490, abs=0.002) and high == pytest.approx(0.943, abs=0.002)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(10, 10)[1] == 1.0


def test_soft_block_needs_enough_evidence():
    policy = TrustPolicy(min_gold=10, gold_accuracy=0.8)
    assert soft_block_reason(Trust(0, 8, 0, 0, 4), policy) == ""  # bad so far, but only 8 gold answers
    assert "5/10" in soft_block_reason(Trust(5, 10, 0, 0, 5), policy)  # guessing: posterior ~1
    assert soft_block_reason(Trust(9, 10, 0, 0, 5), policy) == ""
    # 65% on easy gold items is poor work; 90% is a careful worker having a bad day.
    assert "26/40" in soft_block_reason(Trust(26, 40, 0, 0, 20), policy)
    assert soft_block_reason(Trust(36, 40, 0, 0, 20), policy) == ""


def test_soft_block_on_approval_rate():
    policy = TrustPolicy(min_decided=10, approval_rate=0.5)
    assert "approval rate 1/12" in soft_block_reason(Trust(20, 20, 1, 11, 12), policy)
    assert soft_block_reason(Trust(20, 20, 6, 6, 12), policy) == ""


def test_spammer_posterior_separates_a_slip_from_guessing():
    """One miss in eight gold answers is a careful worker's slip; one in two, or three in six, is guessing."""
    policy = TrustPolicy()
    assert spammer_posterior(7, 8, policy) == pytest.approx(0.0198, abs=0.002)
    assert spammer_posterior(1, 2, policy) == pytest.approx(0.410, abs=0.002)
    assert spammer_posterior(2, 6, policy) > 0.97
    assert spammer_posterior(3, 6, policy) < 0.95  # a careful crowd worker (about 0.9) has bad days
    assert spammer_posterior(0, 0, policy) == pytest.approx(policy.spammer_prior)


def test_trusted_needs_enough_evidence_and_a_low_posterior():
    policy = TrustPolicy(trusted_min_gold=6, trusted_max_posterior=0.05)
    assert not is_trusted(Trust(4, 4, 0, 0, 2), policy)  # too little evidence
    assert is_trusted(Trust(7, 8, 0, 0, 1), policy)
    assert not is_trusted(Trust(6, 8, 0, 0, 1), policy)
