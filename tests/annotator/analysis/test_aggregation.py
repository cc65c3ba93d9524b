"""Pure aggregation methods on known data (annotator/analysis/aggregation.py)."""

import random

import pytest
from scipy.special import logit

from annotator.analysis.aggregation import (
    Vote,
    crowdkit_model,
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


def _crowd(*, pairs: int, seed: int, newcomers: int = 0):
    """6 regular workers (90% right) answer `pairs` pairs three times each; the last `newcomers` pairs are
    answered instead by three newcomers who answer nothing else. Pair 0 (three regulars) and the last pair
    (newcomers) are positive, and every answer to them and the newcomers' is right."""
    rng = random.Random(seed)
    truth = {pair: pair in (0, pairs - 1) or rng.random() < 0.4 for pair in range(pairs)}
    votes = []
    for pair, positive in truth.items():
        if pair >= pairs - newcomers:
            votes += [Vote(pair, 100 + k, "yes" if positive else "no") for k in range(3)]
            continue
        for worker in rng.sample(range(6), 3):
            right = pair == 0 or rng.random() >= 0.1
            votes.append(Vote(pair, worker, "yes" if positive == right else "no"))
    return votes, truth


@pytest.mark.parametrize(
    "aggregate",
    [
        majority_vote,
        dawid_skene,
        lambda votes: gold_weighted_vote(votes, gold={}),
        lambda votes: crowdkit_model("glad", votes),
        lambda votes: crowdkit_model("mace", votes),
        lambda votes: crowdkit_model("wawa", votes),
    ],
    ids=["majority", "dawid_skene", "gold_weighted", "glad", "mace", "wawa"],
)
def test_every_four_choice_label_carries_its_probability_inside_a_90_percent_interval(aggregate):
    votes, truth = _crowd(pairs=60, seed=3, newcomers=4)
    labels = aggregate(votes)
    assert set(labels) == set(truth)
    for label in labels.values():
        assert label.probability is not None and label.probability_low is not None
        assert 0.0 <= label.probability_low <= label.probability <= label.probability_high <= 1.0
    # Three agreeing regulars with about 28 answers each are better known than three agreeing newcomers with 4:
    # the lowest P(positive) their answers leave plausible is higher.
    regular, newcomer = labels[0], labels[59]
    assert regular.is_positive and newcomer.is_positive
    assert logit(regular.probability_low) > logit(newcomer.probability_low)


def test_the_interval_narrows_as_the_workers_records_grow():
    small, _ = _crowd(pairs=8, seed=5)
    large, _ = _crowd(pairs=200, seed=5)
    assert dawid_skene(large)[0].probability_low > dawid_skene(small)[0].probability_low


def test_mean_score_for_similarity():
    labels = mean_score(
        [Vote(1, 1, score=4.0), Vote(1, 2, score=2.0), Vote(1, 3, score=4.5), Vote(2, 1, score=1.0)], positive_at=3.0
    )
    assert labels[1].score == pytest.approx(3.5) and labels[1].is_positive and not labels[1].is_positive_strict
    assert labels[1].confidence == pytest.approx(2 / 3)
    assert not labels[2].is_positive and labels[2].answer_count == 1


def test_mean_score_takes_the_threshold_it_is_given():
    """positive_at is the caller's (the campaign's): a 2.6 mean is positive at SIS's 2.5 and not at 3."""
    votes = [Vote(1, 1, score=2.6), Vote(1, 2, score=2.6)]
    assert mean_score(votes, positive_at=2.5)[1].is_positive
    assert not mean_score(votes, positive_at=3.0)[1].is_positive
    with pytest.raises(TypeError):
        mean_score(votes)
