"""The posterior label model (annotator/analysis/posterior.py) on simulated answers with known truth."""

import numpy as np
import pytest

from annotator.analysis.posterior import (
    GOLD_CHECK_MIN_ITEMS,
    PRIOR_COUNT_FLOOR,
    SHORTFALL_LEVEL,
    Z90,
    PosteriorPrior,
    fit_posterior,
    gold_check,
    gold_reference,
    oracle_probability,
    reliability,
    settled_probability,
    worker_evidence,
)


def _crowd(seed, *, pairs=300, per_pair=3, careful=30, spammers=4):
    rng = np.random.default_rng(seed)
    truth = rng.random(pairs) < 0.45
    accuracy = {w: rng.uniform(0.84, 0.94) for w in range(careful)}
    accuracy.update({careful + k: 0.5 for k in range(spammers)})
    rows = []
    for pair in range(pairs):
        for worker in rng.choice(len(accuracy), per_pair, replace=False):
            right = rng.random() < accuracy[worker]
            rows.append((pair, int(worker), bool(truth[pair]) if right else not truth[pair]))
    known = {}
    for gold in range(10_000, 10_040):
        known[gold] = bool(gold % 2)
        for worker in rng.choice(len(accuracy), 8, replace=False):
            right = rng.random() < accuracy[worker]
            rows.append((gold, int(worker), known[gold] if right else not known[gold]))
    pair_ids, worker_ids, verdicts = zip(*rows, strict=True)
    return truth, accuracy, pair_ids, worker_ids, verdicts, known


def test_sparse_workers_rarely_overturn_a_two_to_one_majority():
    """A few dozen answers per worker: the priors keep the model from siding with lone dissenters (it
    overturns few majorities), and it is about as accurate as majority or better."""
    truth, _, pair_ids, worker_ids, verdicts, known = _crowd(0)
    fit = fit_posterior(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, known=known)
    row_of = fit.row_of()
    votes = {}
    for pair, verdict in zip(pair_ids, verdicts, strict=True):
        votes.setdefault(pair, []).append(verdict)
    overturned = sum(
        1 for pair, said in votes.items() if pair < 300 and (sum(said) >= 2) != (fit.probability[row_of[pair]] > 0.5)
    )
    assert overturned <= 10
    accuracy = np.mean([(fit.probability[row_of[p]] > 0.5) == truth[p] for p in range(300)])
    majority = np.mean([(sum(votes[p]) >= 2) == truth[p] for p in range(300)])
    assert accuracy >= majority - 0.01 and accuracy >= 0.92


def test_intervals_hold_the_oracle_probability_and_labels_are_calibrated():
    coverage, errors = [], []
    for seed in range(3):
        truth, accuracy, pair_ids, worker_ids, verdicts, known = _crowd(seed)
        fit = fit_posterior(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, known=known)
        candidates = [k for k, p in enumerate(pair_ids) if p < 300]
        oracle = oracle_probability(
            pair_ids=[pair_ids[k] for k in candidates],
            worker_ids=[worker_ids[k] for k in candidates],
            verdicts=[verdicts[k] for k in candidates],
            sensitivity=accuracy,
            specificity=accuracy,
            prior_log_odds=dict.fromkeys(range(300), float(np.log(truth.mean() / (1 - truth.mean())))),
        )
        low, high = fit.interval()
        row_of = fit.row_of()
        coverage.append(np.mean([low[row_of[p]] <= oracle[p] <= high[row_of[p]] for p in range(300)]))
        errors.append(reliability([fit.probability[row_of[p]] for p in range(300)], truth)[1])
    assert 0.8 <= np.mean(coverage) <= 0.99
    assert np.mean(errors) < 0.05


def test_a_pair_with_more_agreeing_answers_gets_a_narrower_interval():
    fit = fit_posterior(
        pair_ids=[1, 2, 2, 2, 3, 3],
        worker_ids=[10, 10, 11, 12, 10, 11],
        verdicts=[True, True, True, True, True, False],
    )
    low, high = fit.interval()
    row = fit.row_of()
    assert fit.probability[row[2]] > fit.probability[row[1]] > 0.5
    assert high[row[2]] - low[row[2]] < high[row[1]] - low[row[1]]
    assert low[row[3]] < 0.5 < high[row[3]]  # one for, one against: undecided


def test_machine_prior_moves_labels_the_way_the_machine_evidence_points():
    """Features that predict the truth lift the pairs they point at, before any answer settles them."""
    rng = np.random.default_rng(4)
    truth = rng.random(200) < 0.5
    features = {p: np.array([1.0, 2.0 if truth[p] else -2.0]) + rng.normal(0, 0.5, 2) for p in range(200)}
    pair_ids, worker_ids, verdicts = [], [], []
    for pair in range(200):
        for worker in rng.choice(20, 2, replace=False):
            pair_ids.append(pair)
            worker_ids.append(int(worker))
            verdicts.append(bool(truth[pair]) if rng.random() < 0.85 else not truth[pair])
    plain = fit_posterior(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts)
    assisted = fit_posterior(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, features=features)
    right = lambda fit: np.mean([(fit.probability[fit.row_of()[p]] > 0.5) == truth[p] for p in range(200)])  # noqa: E731
    assert right(assisted) > right(plain)


@pytest.mark.parametrize(("kind", "flagged"), [("careful", False), ("random", True), ("adversarial", True)])
def test_worker_evidence_tells_careless_workers_from_careful_ones(kind, flagged):
    truth, accuracy, pair_ids, worker_ids, verdicts, known = _crowd(7)
    rng = np.random.default_rng(0)
    extra = []
    for pair in range(0, 300, 5):  # the checked worker answers 60 pairs
        coin = rng.random()
        said = {"careful": truth[pair] if coin < 0.9 else not truth[pair], "random": coin < 0.5}
        said["adversarial"] = not truth[pair]
        extra.append((pair, 999, bool(said[kind])))
    fit = fit_posterior(
        pair_ids=list(pair_ids) + [e[0] for e in extra],
        worker_ids=list(worker_ids) + [e[1] for e in extra],
        verdicts=list(verdicts) + [e[2] for e in extra],
        known=known,
    )
    evidence = worker_evidence(fit, worker_id=999, below=0.7)
    assert evidence.items == 60 and evidence.compared > 8
    assert (evidence.p_below >= 0.7) is flagged


def test_a_worker_alone_on_their_pairs_is_not_judged_by_the_class_prior_they_shaped():
    """Sixteen pairs only one worker answered (all "no"): the class prior the fit learns leans the same
    way, but that is the worker's own evidence, so nothing is compared until someone else answers."""
    pair_ids = list(range(16))
    alone = fit_posterior(pair_ids=pair_ids, worker_ids=[7] * 16, verdicts=[False] * 16)
    assert worker_evidence(alone, worker_id=7).compared == 0.0
    witnessed = fit_posterior(pair_ids=pair_ids * 3, worker_ids=[7] * 16 + [8] * 16 + [9] * 16, verdicts=[False] * 48)
    evidence = worker_evidence(witnessed, worker_id=7)
    assert evidence.compared >= 8 and evidence.p_below < 0.05


def test_the_hierarchical_prior_starts_a_newcomer_from_the_crowds_accuracy_at_work():
    """A crowd right 70% of the time at work: with the hierarchical prior a newcomer with two answers is judged
    as that crowd (about 0.7), not as the fixed careful worker (0.85) the flat prior assumes."""
    rng = np.random.default_rng(3)
    truth = rng.random(300) < 0.5
    rows = []
    for pair in range(300):
        for worker in rng.choice(12, 3, replace=False):
            rows.append((pair, int(worker), bool(truth[pair]) if rng.random() < 0.7 else not truth[pair]))
    known = {10_000 + k: bool(k % 2) for k in range(40)}
    for gold, value in known.items():
        for worker in rng.choice(12, 3, replace=False):
            rows.append((gold, int(worker), value if rng.random() < 0.7 else not value))
    rows += [(0, 99, bool(truth[0])), (1, 99, bool(truth[1]))]  # the newcomer: two answers, both right
    pair_ids, worker_ids, verdicts = zip(*rows, strict=True)
    flat = fit_posterior(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, known=known)
    crowd = fit_posterior(
        pair_ids=pair_ids,
        worker_ids=worker_ids,
        verdicts=verdicts,
        known=known,
        prior=PosteriorPrior(worker_accuracy=0.85, hierarchical=True),
    )
    newcomer = list(crowd.workers).index(99)
    assert abs(crowd.crowd_accuracy() - 0.7) < 0.06
    assert crowd.worker_accuracy()[newcomer] < 0.78 < flat.worker_accuracy()[newcomer]


def test_pairs_answered_once_do_not_teach_the_crowd_its_accuracy():
    """A pair's only answer agrees with the posterior it made, so a crowd that answers each pair once, half of
    them wrongly, must not look flawless: the crowd's accuracy stays at its prior without gold or a second
    answer, and gold then teaches it."""
    rng = np.random.default_rng(3)
    truth = rng.random(400) < 0.5
    pair_ids = list(range(400))
    worker_ids = [k % 20 for k in pair_ids]
    verdicts = [bool(t) if rng.random() < 0.5 else not t for t in truth]
    prior = PosteriorPrior(worker_accuracy=0.85, hierarchical=True)
    once = fit_posterior(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, prior=prior)
    assert abs(once.crowd_accuracy() - 0.85) < 0.01
    known = {1000 + k: bool(k % 2) for k in range(200)}
    gold_pairs, gold_workers = list(known), [k % 20 for k in range(200)]
    gold_verdicts = [value if rng.random() < 0.5 else not value for value in known.values()]
    taught = fit_posterior(
        pair_ids=pair_ids + gold_pairs,
        worker_ids=worker_ids + gold_workers,
        verdicts=verdicts + gold_verdicts,
        known=known,
        prior=prior,
    )
    assert taught.crowd_accuracy() < 0.7


def test_gold_reference_leaves_the_pairs_own_answers_out():
    """Worker 1 is right on every other gold pair, so their answer counts as a careful one's; on the pair they
    miss, the reference does not know they missed it."""
    known = {k: bool(k % 2) for k in range(12)}
    pair_ids, worker_ids, verdicts = [], [], []
    for pair, value in known.items():
        pair_ids.append(pair)
        worker_ids.append(1)
        verdicts.append(value if pair != 5 else not value)
    reference = gold_reference(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, known=known, strength=2)
    assert reference[5] < -1.0  # said "negative" on pair 5 (truly positive), weighed as a reliable worker
    assert reference[4] < 0 < reference[3]


def test_gold_check_widens_only_when_coverage_falls_short_and_by_the_smallest_factor():
    n = GOLD_CHECK_MIN_ITEMS * 2
    variance = np.full(n, 1.0)
    truth = np.arange(n) % 2
    fine = gold_check(log_odds=np.zeros(n), log_odds_var=variance, reference=np.full(n, 0.5), truth=truth)
    assert fine.coverage == 1.0 and fine.inflation == 1.0
    # Every pair 2 half-widths off: covered from a factor of 2 on.
    off = gold_check(log_odds=np.zeros(n), log_odds_var=variance, reference=np.full(n, 2 * Z90), truth=truth)
    assert off.coverage == 0.0 and off.inflation == 2.0 and off.inflated_coverage == 1.0
    few = gold_check(log_odds=np.zeros(3), log_odds_var=np.ones(3), reference=np.full(3, 5.0), truth=[0, 1, 0])
    assert few.coverage == 0.0 and few.inflation == 1.0  # too few gold pairs to act on


@pytest.mark.parametrize(("covered", "widened"), [(17, False), (16, False), (14, True)])
def test_gold_check_widens_on_a_shortfall_chance_does_not_explain(covered, widened):
    """Right 90% intervals hold 16 of 20 gold pairs or fewer 13% of the time: such a shortfall is noise and
    widens nothing (a fixed floor of 0.85 widened it and bought answers nobody needed); 14 of 20 happens 1.1% of the
    time with right intervals, so they are widened."""
    n = 20
    reference = np.where(np.arange(n) < covered, 0.5, 3 * Z90)
    check = gold_check(log_odds=np.zeros(n), log_odds_var=np.ones(n), reference=reference, truth=np.arange(n) % 2)
    assert check.coverage == covered / n
    assert (check.shortfall_p < SHORTFALL_LEVEL) == widened
    assert (check.inflation > 1.0) == widened


def test_the_raised_stopping_bar_needs_more_evidence_and_is_todays_rule_without_inflation():
    assert settled_probability(3.0, 1.0) == pytest.approx(float(1 / (1 + np.exp(-3.0))))
    assert settled_probability(-3.0, 1.0) == pytest.approx(float(1 / (1 + np.exp(-3.0))))
    assert settled_probability(3.0, 1.0, 2.0) == pytest.approx(float(1 / (1 + np.exp(-(3.0 - Z90)))))
    assert settled_probability(3.0, 0.0, 3.0) == settled_probability(3.0, 0.0)  # a known pair stays sure


def _hard_negatives_crowd(seed):
    """Careful workers 86-94% right, but only 61-69% right on the negatives of every third pair (ranked first:
    they look like matches); gold pairs are easy, as a campaign's gold is (never top-ranked)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(360) < 0.4
    hard = np.arange(360) % 3 == 0
    accuracy = {worker: rng.uniform(0.86, 0.94) for worker in range(20)}
    rows = []
    for pair in range(360):
        for worker in rng.choice(20, 3, replace=False):
            right = accuracy[worker] - (0.25 if hard[pair] and not truth[pair] else 0.0)
            rows.append((pair, int(worker), bool(truth[pair]) if rng.random() < right else not truth[pair]))
    known = {10_000 + k: bool(k % 2) for k in range(40)}
    for gold, value in known.items():
        for worker in rng.choice(20, 4, replace=False):
            rows.append((gold, int(worker), value if rng.random() < accuracy[worker] else not value))
    return truth, hard, rows, known


def test_item_difficulty_by_rank_keeps_hard_pairs_calibrated():
    """Learnt from easy gold alone, a worker's "yes" on a first-ranked negative is trusted too much: those pairs
    are called positive with confidence they do not deserve. With the pairs' difficulty classes the crowd's
    specificity on hard pairs is learnt apart, and their P(positive) is calibrated again."""
    prior = PosteriorPrior(worker_accuracy=0.85, hierarchical=True)
    errors = {"flat": [], "difficulty": []}
    for seed in range(3):
        truth, hard, rows, known = _hard_negatives_crowd(seed)
        pair_ids, worker_ids, verdicts = zip(*rows, strict=True)
        classes = {pair: 2 for pair in range(360) if hard[pair]}
        for name, difficulty in (("flat", None), ("difficulty", classes)):
            fit = fit_posterior(
                pair_ids=pair_ids,
                worker_ids=worker_ids,
                verdicts=verdicts,
                known=known,
                prior=prior,
                difficulty=difficulty,
            )
            row_of = fit.row_of()
            probability = [fit.probability[row_of[pair]] for pair in range(360) if hard[pair]]
            errors[name].append(reliability(probability, truth[hard])[1])
    assert np.mean(errors["flat"]) > 0.15  # the failure this guards against
    assert np.mean(errors["difficulty"]) < 0.11
    # The classes are read only with the hierarchical prior (the crowd's specificity per class is what it learns).
    truth, hard, rows, known = _hard_negatives_crowd(0)
    pair_ids, worker_ids, verdicts = zip(*rows, strict=True)
    flat = fit_posterior(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, known=known)
    same = fit_posterior(
        pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, known=known, difficulty={0: 2, 3: 2}
    )
    assert np.allclose(flat.probability, same.probability)


def _machine_witness_fit(worker_right: float, seed: int = 5):
    """200 pairs with a machine feature that tells the truth most of the time; pairs 0-149 answered by three of
    twenty careful workers, pairs 150-165 by worker 99 alone (right `worker_right` of the time), who also answered
    two gold pairs right."""
    rng = np.random.default_rng(seed)
    truth = rng.random(200) < 0.5
    features = {pair: np.array([float(truth[pair]) + rng.normal(0, 0.35)]) for pair in range(200)}
    rows = []
    for pair in range(150):
        for worker in rng.choice(20, 3, replace=False):
            rows.append((pair, int(worker), bool(truth[pair]) if rng.random() < 0.9 else not truth[pair]))
    for pair in range(150, 166):
        rows.append((pair, 99, bool(truth[pair]) if rng.random() < worker_right else not truth[pair]))
    known = {1000: True, 1001: False}
    rows += [(1000, 99, True), (1001, 99, False)]
    pair_ids, worker_ids, verdicts = zip(*rows, strict=True)
    return fit_posterior(pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, known=known, features=features)


def test_the_machine_prior_witnesses_pairs_nobody_else_answered():
    """A worker whose pairs nobody else answered is judged on their two gold answers alone, too few comparisons to
    vouch for them or to condemn them; with the machine prior as the other witness their sixteen pairs count, so a
    careful worker is cleared and a worker who answers against the evidence is found careless."""
    careful = _machine_witness_fit(0.9)
    alone = worker_evidence(careful, worker_id=99)
    assert alone.items == 2 and alone.compared < 8
    witnessed = worker_evidence(careful, worker_id=99, machine_witness=True)
    assert witnessed.items == 18 and witnessed.compared >= 8 and witnessed.p_below < 0.3
    contrary = worker_evidence(_machine_witness_fit(0.2), worker_id=99, machine_witness=True)
    assert contrary.compared >= 8 and contrary.p_below > 0.9
    # Without a machine prior there is no witness: a pair's q rests on the class rate, which the answers shaped.
    truth_free = fit_posterior(pair_ids=[1, 2, 3], worker_ids=[99, 99, 99], verdicts=[True, True, False])
    assert worker_evidence(truth_free, worker_id=99, machine_witness=True).items == 0


def _easy_gold_crowd(seed: int):
    """Careful workers 90% right on candidates (both classes), flawless on gold negatives (random pairs nobody would
    call a match) and 90% on gold positives; 300 candidates (class 1), two answers each, 40 gold pairs."""
    rng = np.random.default_rng(seed)
    truth = rng.random(300) < 0.6
    rows = []
    for pair in range(300):
        for worker in rng.choice(20, 2, replace=False):
            rows.append((pair, int(worker), bool(truth[pair]) if rng.random() < 0.9 else not truth[pair]))
    known = {10_000 + k: bool(k % 2) for k in range(40)}
    for gold, value in known.items():
        for worker in rng.choice(20, 4, replace=False):
            right = 1.0 if not value else 0.9
            rows.append((gold, int(worker), value if rng.random() < right else not value))
    pair_ids, worker_ids, verdicts = zip(*rows, strict=True)
    return truth, {"pair_ids": pair_ids, "worker_ids": worker_ids, "verdicts": verdicts, "known": known}


def test_easy_gold_negatives_do_not_make_a_yes_on_a_candidate_overwhelming():
    """Gold is its own difficulty class and no worker's prior is J-shaped: a crowd flawless on easy gold negatives
    is not taken to be flawless on candidate negatives, so one "yes" does not outweigh a "no" by much (true weights:
    +-2.2 nats each). Without the floor (a prior count of 0.2 for errors) a "yes" weighed 6 nats in a campaign."""
    truth, inputs = _easy_gold_crowd(1)
    candidates = {pair: 1 for pair in range(300)}
    fit = fit_posterior(**inputs, difficulty=candidates, prior=PosteriorPrior(worker_accuracy=0.9, hierarchical=True))
    rows, workers, verdicts = fit.votes
    weights = fit.answer_weights(rows, workers, verdicts)
    on_candidates = fit.pairs[rows] < 10_000
    yes = weights[on_candidates & (verdicts > 0.5)].mean()
    no = weights[on_candidates & (verdicts < 0.5)].mean()
    assert 1.5 < yes < 3.2 and -3.2 < no < -1.5
    # A "yes" and a "no" cancel, as for a worker 90% right either way (0.46 with gold and candidates in one class).
    assert abs(yes + no) < 0.25
    spec = fit.spec_by_class[:, :, 0] / fit.spec_by_class.sum(2)
    assert spec[:, 0].mean() > 0.93 and spec[:, 1].mean() < 0.93  # gold negatives easy, candidates not


def test_a_pairs_own_answers_do_not_shape_its_machine_prior_when_cross_fitted():
    """With the machine prior cross-fitted, flipping every answer on one pair leaves that pair's prior where the other
    pairs put it; fitted on every pair at once, the pair's own answers pull its prior their way."""
    rng = np.random.default_rng(3)
    truth = rng.random(200) < 0.5
    features = {pair: np.array([float(truth[pair]) + rng.normal(0, 0.6), rng.normal()]) for pair in range(200)}
    rows = []
    for pair in range(200):
        for worker in rng.choice(20, 2, replace=False):
            rows.append((pair, int(worker), bool(truth[pair]) if rng.random() < 0.9 else not truth[pair]))
    flipped = [(pair, worker, (not said) if pair == 7 else said) for pair, worker, said in rows]
    moved = {}
    for folds in (1, 5):
        priors = []
        for answers in (rows, flipped):
            pair_ids, worker_ids, verdicts = zip(*answers, strict=True)
            fit = fit_posterior(
                pair_ids=pair_ids,
                worker_ids=worker_ids,
                verdicts=verdicts,
                features=features,
                prior=PosteriorPrior(prior_folds=folds),
            )
            priors.append(fit.prior_log_odds[fit.row_of()[7]])
        moved[folds] = abs(priors[0] - priors[1])
    assert moved[5] < 0.05 < moved[1]


def test_no_worker_starts_from_a_prior_that_rules_out_errors():
    """Twenty clean answers on a hard class cannot show an error rate near zero (the rule of three puts its 95% upper
    bound at 0.15): a newcomer's one "yes" there weighs a few nats, not the 6 it weighed when the crowd's prior on a
    worker left 0.2 pseudo-counts for errors (a J-shaped Beta, E[log(1 - t)] near -6). Every prior count is at least
    PRIOR_COUNT_FLOOR."""
    rng = np.random.default_rng(11)
    truth = rng.random(300) < 0.5
    classes = {pair: 2 if pair < 10 else 1 for pair in range(301)}
    rows = []
    for pair in range(300):
        for worker in rng.choice(30, 2, replace=False):
            right = pair < 10 or rng.random() < 0.9  # the hard class: every answer right so far
            rows.append((pair, int(worker), bool(truth[pair]) if right else not truth[pair]))
    rows.append((300, 99, True))  # a newcomer's "yes" on a hard pair nobody else answered
    pair_ids, worker_ids, verdicts = zip(*rows, strict=True)
    fit = fit_posterior(
        pair_ids=pair_ids,
        worker_ids=worker_ids,
        verdicts=verdicts,
        difficulty=classes,
        prior=PosteriorPrior(worker_accuracy=0.95, hierarchical=True),
    )
    newcomer = int(np.searchsorted(fit.workers, 99))
    assert fit.spec_by_class[newcomer, 2, 1] >= PRIOR_COUNT_FLOOR and fit.sens[newcomer, 1] >= PRIOR_COUNT_FLOOR
    weight = fit.answer_weights(np.array([fit.row_of()[300]]), np.array([newcomer]), np.array([1.0]))[0]
    assert weight < 4.0
