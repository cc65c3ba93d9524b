"""CxC's analyses: the spread of each pair's ratings and the sampled bootstrap Spearman correlation."""

import random

from annotator.analysis.cxc_analysis import bootstrap_spearman, rating_spread


def test_rating_spread_is_the_standard_deviation_of_each_pairs_ratings():
    spread = rating_spread({1: [2.0, 2.0, 2.0, 2.0, 2.0], 2: [0.0, 5.0], 3: [1.0, 2.0, 3.0]})
    assert spread["pairs"] == 3
    assert abs(spread["mean_sd"] - (0 + 2.5 + (2 / 3) ** 0.5) / 3) < 1e-9
    counts = {bucket["from"]: bucket["pairs"] for bucket in spread["histogram"]}
    assert counts[0.0] == 1 and counts[0.75] == 1 and counts[2.5] == 1 and sum(counts.values()) == 3


def _rows(model, queries=200, per_query=4, seed=0):
    rng = random.Random(seed)
    rows = []
    for query in range(queries):
        for _ in range(per_query):
            human = rng.uniform(0, 5)
            rows.append((query, human, model(human, rng)))
    return rows


def test_bootstrap_spearman_follows_the_models_agreement_with_people():
    agree = bootstrap_spearman(_rows(lambda h, rng: h + rng.gauss(0, 0.3)), samples=200)
    disagree = bootstrap_spearman(_rows(lambda h, rng: -h), samples=200)
    unrelated = bootstrap_spearman(_rows(lambda h, rng: rng.random()), samples=200)
    assert agree["spearman"] > 0.9 and abs(disagree["spearman"] + 1.0) < 1e-9 and abs(unrelated["spearman"]) < 0.1
    assert agree["samples"] == 200 and agree["queries"] == 200 and agree["pairs"] == 800
    # Half of the queries and one pair each per sample: the estimate varies between samples.
    assert 0 < unrelated["sd"] < 0.2
    assert bootstrap_spearman(_rows(lambda h, rng: h), samples=50, seed=3) == bootstrap_spearman(
        _rows(lambda h, rng: h), samples=50, seed=3
    )


def test_too_few_queries_give_no_correlation():
    assert bootstrap_spearman([(1, 1.0, 2.0), (2, 2.0, 3.0)])["spearman"] is None
