"""Krippendorff's alpha (annotator/analysis/agreement.py) against the reference `krippendorff` package."""

import krippendorff
import numpy as np
import pytest

from annotator.analysis.agreement import krippendorff_alpha


def _reference(triples, metric):
    units = sorted({u for u, _, _ in triples})
    coders = sorted({c for _, c, _ in triples})
    matrix = np.full((len(coders), len(units)), np.nan)
    for unit, coder, value in triples:
        matrix[coders.index(coder), units.index(unit)] = value
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement=metric)


@pytest.mark.parametrize("metric", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_matches_the_reference_package(metric, seed):
    """Sparse crowd data: 60 units, 12 coders, 2-4 answers per unit, some coders noisy."""
    rng = np.random.default_rng(seed)
    triples = []
    for unit in range(60):
        truth = rng.integers(0, 4)
        for coder in rng.choice(12, size=rng.integers(2, 5), replace=False):
            value = truth if rng.random() < 0.7 else rng.integers(0, 4)
            triples.append((unit, int(coder), int(value)))
    triples.append((999, 0, 2))  # a unit with one value: not pairable, ignored by both
    ours = krippendorff_alpha(triples, metric=metric)
    assert ours == pytest.approx(_reference(triples, metric), abs=1e-9)
    assert 0.0 < ours < 1.0


def test_interval_alpha_on_continuous_scores_matches():
    rng = np.random.default_rng(5)
    triples = [
        (unit, coder, float(np.clip(rng.normal(unit % 6, 0.8), 0, 5)))
        for unit in range(40)
        for coder in rng.choice(8, 5, replace=False)
    ]
    assert krippendorff_alpha(triples, metric="interval") == pytest.approx(_reference(triples, "interval"), abs=1e-9)


def test_perfect_agreement_is_one_and_undefined_cases_are_none():
    assert krippendorff_alpha([(1, "a", 0), (1, "b", 0), (2, "a", 3), (2, "b", 3)]) == pytest.approx(1.0)
    assert krippendorff_alpha([(1, "a", 2), (2, "b", 1)]) is None  # nothing pairable
    assert krippendorff_alpha([(1, "a", 2), (1, "b", 2)]) is None  # no variation: D_e = 0
