"""Pure aggregation methods on known data (annotator/analysis/aggregation.py)."""

import random

import pytest

from annotator.analysis.aggregation import (
    Vote,
    dawid_skene,
    gold_weighted_vote,
    majority_vote,
    mean_score,
    worker_weight_from_gold,
)


def test_majority_vote_positive_strict_and_confidence():
    votes = [
        Vote(1, 1, "yes"),
        Vote(1, 2, "yes"),
        Vote(1, 3, "no"),
        Vote(2, 1, "partially_yes"),
        Vote(2, 2, "partially_yes"),
        Vote(2, 3, "yes"),
    ]
    labels = majority_vote(votes)
    assert labels[1].is_positive and labels[1].is_positive_strict and labels[1].choice == "yes"
    assert labels[1].confidence == pytest.approx(2 / 3) and labels[1].answer_count == 3
    assert labels[2].is_positive and not labels[2].is_positive_strict and labels[2].confidence == 1.0


def test_majority_tie_is_negative_with_half_confidence():
    labels = majority_vote([Vote(1, 1, "yes"), Vote(1, 2, "no")])
    assert not labels[1].is_positive and labels[1].confidence == 0.5


def test_gold_weighted_vote_lets_an_accurate_worker_outvote_two_coin_flippers():
    votes = [Vote(1, 1, "yes"), Vote(1, 2, "no"), Vote(1, 3, "mostly_no")]
    gold = {1: (40, 40), 2: (5, 10), 3: (6, 12)}
    assert not majority_vote(votes)[1].is_positive
    label = gold_weighted_vote(votes, gold=gold)[1]
    assert label.is_positive and label.confidence > 0.9
    assert worker_weight_from_gold(5, 10) == 0.0  # no better than a coin: no say


def test_dawid_skene_recovers_truth_despite_spammers():
    """4 careful workers (5% error) and 2 always-yes workers on 300 pairs: DS beats majority vote."""
    rng = random.Random(7)
    truth = {pair: rng.random() < 0.4 for pair in range(300)}
    votes = []
    for pair, positive in truth.items():
        workers = rng.sample(range(6), 3)
        for worker in workers:
            if worker >= 4:
                choice = "yes"
            else:
                right = rng.random() >= 0.05
                choice = "yes" if positive == right else "no"
            votes.append(Vote(pair, worker, choice))
    accuracy = {
        name: sum(labels[p].is_positive == truth[p] for p in truth) / len(truth)
        for name, labels in (("mv", majority_vote(votes)), ("ds", dawid_skene(votes)))
    }
    assert accuracy["ds"] >= 0.93  # 0.947 with this seed; a careful minority of 1 still errs 5%
    assert accuracy["ds"] >= accuracy["mv"] + 0.05
    assert all(0.5 <= label.confidence <= 1 for label in dawid_skene(votes).values())


def test_mean_score_for_similarity():
    labels = mean_score([Vote(1, 1, score=4.0), Vote(1, 2, score=2.0), Vote(1, 3, score=4.5), Vote(2, 1, score=1.0)])
    assert labels[1].score == pytest.approx(3.5) and labels[1].is_positive and not labels[1].is_positive_strict
    assert labels[1].confidence == pytest.approx(2 / 3)
    assert not labels[2].is_positive and labels[2].answer_count == 1
