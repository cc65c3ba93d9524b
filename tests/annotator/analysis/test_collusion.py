"""Collusion detection (annotator/analysis/collusion.py): who agrees far beyond what accuracy and the items explain."""

import random

import pytest
from scipy.stats import binom

from annotator.analysis.collusion import AnswerRow, WorkerModel, collusion_groups, poisson_binomial_tail

HIT_SIZE = 18


def _careful(rng, accuracy: float, truth: bool) -> str:
    """A careful worker: right with `accuracy`, the middle answer one time in four."""
    says_positive = truth if rng.random() < accuracy else not truth
    extreme = rng.random() < 0.75
    if says_positive:
        return "yes" if extreme else "partially_yes"
    return "no" if extreme else "mostly_no"


def _model(rows, truth) -> WorkerModel:
    """What the crowd's fit learns of a worker: Beta posteriors of sensitivity and specificity, prior 8:2."""
    tp = sum(1 for r in rows if truth[r.pair] and r.choice in ("yes", "partially_yes"))
    fn = sum(1 for r in rows if truth[r.pair] and r.choice in ("no", "mostly_no"))
    tn = sum(1 for r in rows if not truth[r.pair] and r.choice in ("no", "mostly_no"))
    fp = sum(1 for r in rows if not truth[r.pair] and r.choice in ("yes", "partially_yes"))
    return WorkerModel(sens=(8.0 + tp, 2.0 + fn), spec=(8.0 + tn, 2.0 + fp))


def _detect(rows, truth, sure: float = 3.0):
    """Groups found when the crowd's log-odds of each pair lean `sure` toward its truth."""
    models = {w: _model([r for r in rows if r.worker == w], truth) for w in {r.worker for r in rows}}
    log_odds = {pair: (sure if positive else -sure) for pair, positive in truth.items()}
    return collusion_groups(answers=rows, log_odds=log_odds, workers=models)


def test_poisson_binomial_tail_is_the_binomial_tail_for_equal_probabilities():
    assert poisson_binomial_tail([0.3] * 40, 20) == pytest.approx(binom.sf(19, 40, 0.3), rel=1e-9)
    assert poisson_binomial_tail([0.5, 0.5], 0) == 1.0 and poisson_binomial_tail([0.5], 2) == 0.0


def test_a_shared_sheet_read_by_position_is_caught_across_different_hits():
    """Two workers answer three HITs each, none in common, from one sheet by position: identical sequences on
    different pairs, which independent workers of any accuracy the evidence allows would not give."""
    rng = random.Random(7)
    sheet = [rng.choice(["yes", "no", "partially_yes", "mostly_no"]) for _ in range(HIT_SIZE)]
    truth, rows = {}, []
    for worker, first_hit in ((1, 0), (2, 3)):
        for hit in range(first_hit, first_hit + 3):
            for position in range(HIT_SIZE):
                pair = hit * 100 + position
                truth[pair] = rng.random() < 0.3
                rows.append(AnswerRow(worker=worker, hit=hit, position=position, pair=pair, choice=sheet[position]))
    groups = _detect(rows, truth)
    assert [g.workers for g in groups] == [(1, 2)]
    evidence = groups[0].strongest
    assert evidence.test == "position" and evidence.matched == evidence.compared == 3 * HIT_SIZE
    assert evidence.expected < 0.8 * evidence.compared and evidence.p_value < 1e-9


def test_identical_answers_to_shared_pairs_from_workers_no_better_than_chance_are_caught():
    """Two workers who give one coin's answer per pair (right half the time) agree on all 30 shared pairs."""
    rng = random.Random(3)
    truth = {pair: rng.random() < 0.3 for pair in range(30)}
    coin = {pair: rng.choice(["yes", "no"]) for pair in truth}
    rows = [
        AnswerRow(worker=worker, hit=pair // HIT_SIZE, position=pair % HIT_SIZE, pair=pair, choice=coin[pair])
        for worker in (1, 2)
        for pair in truth
    ]
    groups = _detect(rows, truth)
    assert [g.workers for g in groups] == [(1, 2)]
    assert {e.test for e in groups[0].evidence} == {"shared_items"}


@pytest.mark.parametrize("accuracy", [0.9, 0.95])
def test_careful_workers_who_agree_because_both_are_right_are_not_flagged(accuracy):
    """Two independent careful workers on the same 200 pairs (they agree on ~82-90% of them), on 20 seeds:
    never a collusion group, by shared pairs or by position."""
    for seed in range(20):
        rng = random.Random(seed)
        truth = {pair: rng.random() < 0.3 for pair in range(200)}
        rows = [
            AnswerRow(
                worker=worker,
                hit=pair // HIT_SIZE,
                position=pair % HIT_SIZE,
                pair=pair,
                choice=_careful(rng, accuracy, truth[pair]),
            )
            for worker in (1, 2)
            for pair in truth
        ]
        agreeing = sum(
            1
            for a, b in zip(rows[:200], rows[200:], strict=True)
            if (a.choice in ("yes", "partially_yes")) == (b.choice in ("yes", "partially_yes"))
        )
        assert agreeing >= 0.78 * 200  # they do agree a lot
        assert _detect(rows, truth) == [], seed


def test_workers_who_always_say_yes_are_not_colluders():
    """Two always-yes workers give identical answers everywhere, but their own habit explains it (their
    sensitivity near 1, their specificity near 0): the careless-worker rules catch them, not this one."""
    rng = random.Random(5)
    truth = {pair: rng.random() < 0.3 for pair in range(60)}
    rows = [
        AnswerRow(worker=worker, hit=pair // HIT_SIZE, position=pair % HIT_SIZE, pair=pair, choice="yes")
        for worker in (1, 2)
        for pair in truth
    ]
    assert _detect(rows, truth) == []
