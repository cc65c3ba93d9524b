"""Posterior labels: a Bayesian two-coin Dawid-Skene model with gold, worker priors and a per-pair prior.

Each pair i is truly positive (z_i = 1) or not. Worker j says "positive" with probability s_j when it is
(sensitivity) and "negative" with probability t_j when it is not (specificity); s_j and t_j have Beta
priors centred on a careful worker, so a worker with two or three HITs is judged mostly by the prior and
a lone dissenter cannot overturn two agreeing workers (plain Dawid-Skene fits a confusion matrix to a
handful of answers and sometimes does). Gold pairs have a known z and teach the model about workers. The
pair's prior P(z_i = 1) is either one campaign-wide rate with a Beta prior, or a logistic model of the
machine annotators' evidence (rank, score, how many proposed it), fitted in the same EM on the gold and
the crowd's posteriors (the machine as a calibrated prior, not as a vote).

Fitted by variational Bayes (Liu, Peng and Ihler 2012): the E-step uses E[log s_j] = psi(a) - psi(a + b),
so the worker's weight already carries its uncertainty. Every pair gets the posterior P(z_i = 1) and a 90%
interval of it: the log-odds are a sum of independent terms (the prior and one per answer), each with a
variance from its Beta posterior (trigamma), and the normal interval on the log-odds is mapped back
through the logistic function. The interval is wide when the pair rests on workers we know little about.

Pure numpy and scipy; no Django.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import digamma, expit, polygamma

Z90 = 1.6448536269514722  # the two-sided 90% normal quantile


def trigamma(x):
    return polygamma(1, x)


@dataclass(frozen=True)
class PosteriorPrior:
    """The model's priors: a worker is a careful one (85% right on each class) worth `strength` answers."""

    worker_accuracy: float = 0.85
    worker_strength: float = 10.0
    class_rate: float = 0.5  # P(positive) before any evidence, when there is no machine prior
    class_strength: float = 2.0
    ridge: float = 1.0  # L2 penalty of the machine prior's logistic model
    iterations: int = 60
    tolerance: float = 1e-6
    # Hierarchical: every worker's prior is the crowd's (its mean sensitivity and specificity at work, from
    # the gold and peer evidence of this fit) worth `worker_strength` answers; the crowd's mean itself has a
    # Beta prior centred on `worker_accuracy` (the requester's record) worth `crowd_strength` answers.
    hierarchical: bool = False
    crowd_strength: float = 20.0


@dataclass
class PosteriorFit:
    """The fitted model. Arrays are indexed by pair row and worker row (see `pairs` and `workers`)."""

    pairs: np.ndarray  # pair ids, one row each
    workers: np.ndarray  # worker ids
    probability: np.ndarray  # P(positive) per pair
    log_odds: np.ndarray
    log_odds_var: np.ndarray
    answers: np.ndarray  # human answers per pair
    sens: np.ndarray  # Beta (alpha, beta) of each worker's sensitivity, shape (W, 2)
    spec: np.ndarray  # Beta (alpha, beta) of each worker's specificity
    prior_log_odds: np.ndarray  # the pair's prior, per pair
    prior_var: np.ndarray
    votes: tuple = field(default_factory=tuple)  # (pair row, worker row, verdict) arrays of the fit
    # The Beta prior every worker started from: rows sensitivity and specificity, columns (alpha, beta).
    crowd_prior: np.ndarray = field(default_factory=lambda: np.zeros((2, 2)))

    def interval(self, level_z: float = Z90) -> tuple[np.ndarray, np.ndarray]:
        half = level_z * np.sqrt(self.log_odds_var)
        return expit(self.log_odds - half), expit(self.log_odds + half)

    def row_of(self) -> dict[int, int]:
        return {int(pair): row for row, pair in enumerate(self.pairs)}

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """Each worker's expected log-likelihood-ratio weight of a "positive" and of a "negative" answer."""
        log_s = digamma(self.sens[:, 0]) - digamma(self.sens.sum(1))
        log_1s = digamma(self.sens[:, 1]) - digamma(self.sens.sum(1))
        log_t = digamma(self.spec[:, 0]) - digamma(self.spec.sum(1))
        log_1t = digamma(self.spec[:, 1]) - digamma(self.spec.sum(1))
        return log_s - log_1t, log_1s - log_t

    def crowd_accuracy(self) -> float:
        """The mean balanced accuracy of the workers' prior (the crowd's, when the prior is hierarchical)."""
        return float(
            0.5
            * (self.crowd_prior[0, 0] / self.crowd_prior[0].sum() + self.crowd_prior[1, 0] / self.crowd_prior[1].sum())
        )

    def worker_accuracy(self) -> np.ndarray:
        """Each worker's posterior mean balanced accuracy (mean of sensitivity and specificity)."""
        return 0.5 * (self.sens[:, 0] / self.sens.sum(1) + self.spec[:, 0] / self.spec.sum(1))


def _logistic_fit(x: np.ndarray, target: np.ndarray, weight: np.ndarray, ridge: float, coef: np.ndarray):
    """A few Newton steps of an L2-penalised logistic regression on soft targets; returns coef and the
    inverse Hessian (the Laplace posterior covariance of the coefficients)."""
    penalty = np.full(x.shape[1], ridge)
    penalty[0] = ridge * 1e-3  # the intercept is hardly penalised
    for _ in range(8):
        p = expit(x @ coef)
        gradient = x.T @ (weight * (target - p)) - penalty * coef
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        coef = coef + step
        if np.max(np.abs(step)) < 1e-6:
            break
    p = expit(x @ coef)
    hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + np.diag(penalty)
    return coef, np.linalg.inv(hessian)


def fit_posterior(
    *,
    pair_ids,
    worker_ids,
    verdicts,
    known: dict[int, bool] | None = None,
    features: dict[int, np.ndarray] | None = None,
    prior: PosteriorPrior = PosteriorPrior(),
) -> PosteriorFit:
    """Fit the model to binary verdicts: pair_ids[k], worker_ids[k] said verdicts[k] (True = positive).

    `known` maps a gold pair to its truth (it is not estimated, and it teaches the model about workers).
    `features` maps a pair to its machine-annotator features (same length for all); pairs without any get
    zeros. With features, the pair's prior is a logistic model of them; without, one campaign-wide rate.
    """
    known = known or {}
    pair_ids = np.asarray(pair_ids, dtype=np.int64)
    worker_ids = np.asarray(worker_ids, dtype=np.int64)
    verdicts = np.asarray(verdicts, dtype=float)
    all_pairs = np.unique(np.concatenate([pair_ids, np.fromiter(known, dtype=np.int64, count=len(known))]))
    if features:
        all_pairs = np.unique(np.concatenate([all_pairs, np.fromiter(features, dtype=np.int64, count=len(features))]))
    workers = np.unique(worker_ids)
    n_pairs, n_workers = len(all_pairs), len(workers)
    prow = np.searchsorted(all_pairs, pair_ids)
    wrow = np.searchsorted(workers, worker_ids)
    answers = np.bincount(prow, minlength=n_pairs).astype(float)

    is_known = np.zeros(n_pairs, dtype=bool)
    known_value = np.zeros(n_pairs)
    if known:
        rows = np.searchsorted(all_pairs, np.fromiter(known, dtype=np.int64, count=len(known)))
        is_known[rows] = True
        known_value[rows] = np.fromiter((float(v) for v in known.values()), dtype=float, count=len(known))

    a0 = prior.worker_accuracy * prior.worker_strength
    b0 = (1 - prior.worker_accuracy) * prior.worker_strength
    # Start from the (gold-fixed) majority with the class prior.
    positive_votes = np.bincount(prow, weights=verdicts, minlength=n_pairs)
    q = np.where(answers > 0, (positive_votes + prior.class_rate) / (answers + 1.0), prior.class_rate)
    q = np.where(is_known, known_value, q)

    design = None
    if features:
        width = len(next(iter(features.values())))
        design = np.zeros((n_pairs, width + 1))
        design[:, 0] = 1.0
        rows = np.searchsorted(all_pairs, np.fromiter(features, dtype=np.int64, count=len(features)))
        design[rows, 1:] = np.array(list(features.values()), dtype=float)
        # Standardise the features so one ridge penalty fits all of them.
        mean = design[:, 1:].mean(0)
        std = design[:, 1:].std(0)
        std[std == 0] = 1.0
        design[:, 1:] = (design[:, 1:] - mean) / std
        coef = np.zeros(width + 1)
        covariance = np.eye(width + 1)

    prior_log_odds = np.zeros(n_pairs)
    prior_var = np.zeros(n_pairs)
    sens = np.zeros((n_workers, 2))
    spec = np.zeros((n_workers, 2))
    log_odds = np.zeros(n_pairs)
    crowd_prior = np.array([[a0, b0], [a0, b0]])
    # What can tell the crowd's accuracy: answers on pairs whose truth is known (gold), or that someone else
    # answered too. A pair's only answer agrees with the q it made itself, so counting it would make a crowd
    # that answers each pair once look flawless and settle every pair on one answer.
    informative = is_known[prow] | (answers[prow] >= 2)
    for _ in range(prior.iterations):
        # M-step: worker Beta posteriors and the pair prior.
        qv = q[prow]
        if prior.hierarchical:
            crowd_prior = _crowd_prior(qv[informative], verdicts[informative], prior)
        (sa, sb), (ta, tb) = crowd_prior
        sens[:, 0] = sa + np.bincount(wrow, weights=qv * verdicts, minlength=n_workers)
        sens[:, 1] = sb + np.bincount(wrow, weights=qv * (1 - verdicts), minlength=n_workers)
        spec[:, 0] = ta + np.bincount(wrow, weights=(1 - qv) * (1 - verdicts), minlength=n_workers)
        spec[:, 1] = tb + np.bincount(wrow, weights=(1 - qv) * verdicts, minlength=n_workers)
        if design is not None:
            coef, covariance = _logistic_fit(design, q, np.ones(n_pairs), prior.ridge, coef)
            prior_log_odds = design @ coef
            prior_var = np.einsum("ij,jk,ik->i", design, covariance, design)
        else:
            unknown = ~is_known
            alpha = prior.class_rate * prior.class_strength + q[unknown].sum()
            beta = (1 - prior.class_rate) * prior.class_strength + (1 - q[unknown]).sum()
            prior_log_odds = np.full(n_pairs, digamma(alpha) - digamma(beta))
            prior_var = np.full(n_pairs, trigamma(alpha) + trigamma(beta))
        # E-step.
        fit = PosteriorFit(
            pairs=all_pairs,
            workers=workers,
            probability=q,
            log_odds=log_odds,
            log_odds_var=prior_var,
            answers=answers,
            sens=sens,
            spec=spec,
            prior_log_odds=prior_log_odds,
            prior_var=prior_var,
        )
        weight_yes, weight_no = fit.weights()
        contribution = np.where(verdicts > 0.5, weight_yes[wrow], weight_no[wrow])
        log_odds = prior_log_odds + np.bincount(prow, weights=contribution, minlength=n_pairs)
        new_q = np.where(is_known, known_value, expit(log_odds))
        change = np.max(np.abs(new_q - q)) if n_pairs else 0.0
        q = new_q
        if change < prior.tolerance:
            break

    # The variance of each answer's weight, from the Beta posteriors (independent s and t per worker).
    def log_var(alpha, beta):
        return trigamma(alpha) - trigamma(alpha + beta)

    def log_complement_var(alpha, beta):
        return trigamma(beta) - trigamma(alpha + beta)

    var_yes = log_var(sens[:, 0], sens[:, 1]) + log_complement_var(spec[:, 0], spec[:, 1])
    var_no = log_complement_var(sens[:, 0], sens[:, 1]) + log_var(spec[:, 0], spec[:, 1])
    answer_var = np.where(verdicts > 0.5, var_yes[wrow], var_no[wrow])
    log_odds_var = prior_var + np.bincount(prow, weights=answer_var, minlength=n_pairs)
    log_odds = np.where(is_known, np.where(known_value > 0.5, 50.0, -50.0), log_odds)
    log_odds_var = np.where(is_known, 0.0, log_odds_var)
    return PosteriorFit(
        pairs=all_pairs,
        workers=workers,
        probability=q,
        log_odds=log_odds,
        log_odds_var=log_odds_var,
        answers=answers,
        sens=sens,
        spec=spec,
        prior_log_odds=prior_log_odds,
        prior_var=prior_var,
        votes=(prow, wrow, verdicts),
        crowd_prior=crowd_prior,
    )


def _crowd_prior(qv: np.ndarray, verdicts: np.ndarray, prior: PosteriorPrior) -> np.ndarray:
    """The workers' shared Beta prior, hierarchical: the crowd's mean sensitivity (and specificity) over all
    answers of the fit, each weighed by how likely its pair is positive (negative), with a Beta prior on that
    mean centred on prior.worker_accuracy worth prior.crowd_strength answers; each worker starts from it
    with prior.worker_strength answers' weight, so their own work outweighs it once they have done more."""
    centre, strength, weight = prior.worker_accuracy, prior.crowd_strength, prior.worker_strength
    sens = (centre * strength + (qv * verdicts).sum()) / (strength + qv.sum())
    spec = (centre * strength + ((1 - qv) * (1 - verdicts)).sum()) / (strength + (1 - qv).sum())
    return np.array([[sens * weight, (1 - sens) * weight], [spec * weight, (1 - spec) * weight]])


# ------------------------------------------------------------------------------------ workers vs the crowd

ACCURACY_GRID = np.linspace(0.0, 1.0, 201)


@dataclass(frozen=True)
class WorkerEvidence:
    """How a set of one worker's answers compares with what everyone else says (leave-one-out)."""

    compared: float  # the informative weight of the comparison: sum of |2 q_-j - 1|
    accuracy: float  # posterior mean of the worker's accuracy on these answers (uniform prior)
    p_below: float  # P(accuracy < the threshold asked for)
    items: int


def worker_evidence(
    fit: PosteriorFit, *, worker_id: int, pair_ids=None, below: float = 0.7, without=()
) -> WorkerEvidence:
    """The worker's accuracy on their answers (all of them, or those to `pair_ids`), judged against the
    rest of the evidence: each pair's posterior with this worker's own answer taken out (q_-j), so a
    worker cannot vouch for themselves; the answers of the workers in `without` (their collusion group,
    annotator.analysis.collusion) are taken out too, so they cannot vouch for each other. Likelihood of
    accuracy a for one answer: q_-j a + (1 - q_-j)(1 - a) when they said positive (and the mirror when
    negative); a uniform prior on a grid gives the posterior.
    Pairs the others are unsure of (q_-j near 0.5) say little either way; a pair nobody else answered
    (and whose truth is not known) is left out, since its q_-j rests on the class prior alone, which the
    worker's own answers shaped.
    """
    prow, wrow, verdicts = fit.votes
    matches = np.searchsorted(fit.workers, worker_id)
    if matches >= len(fit.workers) or fit.workers[matches] != worker_id:
        return WorkerEvidence(compared=0.0, accuracy=0.5, p_below=0.0, items=0)
    mine = wrow == matches
    if pair_ids is not None:
        wanted = np.isin(fit.pairs[prow], np.asarray(list(pair_ids), dtype=np.int64))
        mine &= wanted
    weight_yes, weight_no = fit.weights()
    partners = np.isin(fit.workers[wrow], np.asarray(list(without), dtype=np.int64)) & (wrow != matches)
    partner_weight = np.where(verdicts > 0.5, weight_yes[wrow], weight_no[wrow])
    partner_sum = np.bincount(prow[partners], weights=partner_weight[partners], minlength=len(fit.pairs))
    partner_answers = np.bincount(prow[partners], minlength=len(fit.pairs))
    witnessed = (fit.answers[prow] - partner_answers[prow] >= 2) | (np.abs(fit.log_odds[prow]) >= 50.0)
    mine &= witnessed
    if not mine.any():
        return WorkerEvidence(compared=0.0, accuracy=0.5, p_below=0.0, items=0)
    own = np.where(verdicts[mine] > 0.5, weight_yes[matches], weight_no[matches])
    rows = prow[mine]
    loo = expit(fit.log_odds[rows] - own - partner_sum[rows])
    known = np.abs(fit.log_odds[rows]) >= 50.0
    loo = np.where(known, expit(fit.log_odds[rows]), loo)
    agree_if_right = np.where(verdicts[mine] > 0.5, loo, 1 - loo)  # P(the truth is what they said)
    grid = ACCURACY_GRID[:, None]
    likelihood = agree_if_right[None, :] * grid + (1 - agree_if_right[None, :]) * (1 - grid)
    log_post = np.log(np.clip(likelihood, 1e-12, None)).sum(1)
    post = np.exp(log_post - log_post.max())
    post /= post.sum()
    return WorkerEvidence(
        compared=float(np.abs(2 * loo - 1).sum()),
        accuracy=float((post * ACCURACY_GRID).sum()),
        p_below=float(post[ACCURACY_GRID < below].sum()),
        items=int(mine.sum()),
    )


# ------------------------------------------------------------------------------------------- calibration


def reliability(probability, truth, bins: int = 10) -> tuple[list[dict], float]:
    """Reliability table (bins of predicted P(positive): count, mean prediction, share truly positive) and
    the expected calibration error (count-weighted mean gap)."""
    probability = np.asarray(probability, dtype=float)
    truth = np.asarray(truth, dtype=float)
    edges = np.linspace(0, 1, bins + 1)
    index = np.clip(np.digitize(probability, edges[1:-1]), 0, bins - 1)
    table, gap = [], 0.0
    for b in range(bins):
        chosen = index == b
        n = int(chosen.sum())
        if not n:
            continue
        predicted, observed = float(probability[chosen].mean()), float(truth[chosen].mean())
        table.append(
            {"bin": f"{edges[b]:.1f}-{edges[b + 1]:.1f}", "n": n, "predicted": predicted, "observed": observed}
        )
        gap += n * abs(predicted - observed)
    return table, (gap / len(probability) if len(probability) else 0.0)


def oracle_probability(
    *, pair_ids, worker_ids, verdicts, sensitivity: dict, specificity: dict, prior_log_odds: dict
) -> dict[int, float]:
    """P(positive) with the truth about the workers known: each worker's true sensitivity and specificity
    and each pair's true prior log-odds. The quantity a 90% interval of P(positive) should cover."""
    total: dict[int, float] = {}
    for pair, worker, verdict in zip(pair_ids, worker_ids, verdicts, strict=True):
        s = min(max(sensitivity[worker], 1e-6), 1 - 1e-6)
        t = min(max(specificity[worker], 1e-6), 1 - 1e-6)
        weight = np.log(s / (1 - t)) if verdict else np.log((1 - s) / t)
        total[int(pair)] = total.get(int(pair), 0.0) + float(weight)
    return {pair: float(expit(prior_log_odds[pair] + value)) for pair, value in total.items()}


# ------------------------------------------------------------------------------- the posterior checked on gold

GOLD_CHECK_MIN_ITEMS = 10  # answered gold pairs needed before the check may widen anything
COVERAGE_TARGET = 0.9  # what a 90% interval should hold
COVERAGE_FLOOR = 0.85  # below this on gold the intervals are widened (above it, sampling noise of a few dozen items)
INFLATION_GRID = np.round(np.arange(1.0, 5.001, 0.25), 2)


@dataclass(frozen=True)
class GoldCheck:
    """The posterior scored on gold pairs as if their truth were unknown.

    `coverage`: the share of gold pairs whose *reference* P(positive) lies in the 90% interval. The reference
    weighs the same answers by each answering worker's accuracy on the *other* gold pairs (truth, not peer
    agreement), shrunk toward the crowd's gold accuracy; the check asks whether the posterior's interval holds
    what the truth about the workers says. `ece` and `reliability`: P(positive) against the gold truth.
    `inflation`: by how much the interval's half-width (on the log-odds) must grow for `COVERAGE_TARGET` of the
    gold pairs to be covered, when coverage is below COVERAGE_FLOOR; 1.0 otherwise or with too few items."""

    items: int
    coverage: float | None
    ece: float | None
    reliability: list
    inflation: float
    inflated_coverage: float | None


def gold_reference(*, pair_ids, worker_ids, verdicts, known: dict[int, bool], strength: float) -> dict[int, float]:
    """Per gold pair: the log-odds of P(positive) from its answers, each weighed by its worker's accuracy on the
    other gold pairs (sensitivity on gold positives, specificity on gold negatives; this pair's own answers left
    out), with a Beta prior at the crowd's gold accuracy worth `strength` answers. The prior log-odds is 0: a
    HIT holds as many gold positives as negatives."""
    counts: dict[int, np.ndarray] = {}  # worker -> [positives right, positives, negatives right, negatives]
    answers: list[tuple[int, int, bool, bool]] = []
    for pair, worker, said in zip(pair_ids, worker_ids, verdicts, strict=True):
        pair, worker = int(pair), int(worker)
        if pair not in known:
            continue
        truth = bool(known[pair])
        row = counts.setdefault(worker, np.zeros(4))
        row[0 if truth else 2] += float(bool(said) == truth)
        row[1 if truth else 3] += 1.0
        answers.append((pair, worker, bool(said), truth))
    if not answers:
        return {}
    total = np.sum(list(counts.values()), axis=0)
    crowd_s = (total[0] + 1.0) / (total[1] + 2.0)
    crowd_t = (total[2] + 1.0) / (total[3] + 2.0)
    log_odds: dict[int, float] = {}
    for pair, worker, said, truth in answers:
        right, seen, right_neg, seen_neg = counts[worker]
        own = float(said == truth)
        if truth:
            right, seen = right - own, seen - 1.0
        else:
            right_neg, seen_neg = right_neg - own, seen_neg - 1.0
        s = (crowd_s * strength + right) / (strength + seen)
        t = (crowd_t * strength + right_neg) / (strength + seen_neg)
        weight = np.log(s / (1 - t)) if said else np.log((1 - s) / t)
        log_odds[pair] = log_odds.get(pair, 0.0) + float(weight)
    return log_odds


def gold_check(*, log_odds, log_odds_var, reference, truth) -> GoldCheck:
    """Coverage, calibration and the inflation the intervals need, from gold pairs scored as unknown: their
    log-odds and its variance (the crowd's evidence only), the reference log-odds and the truth, one row each."""
    log_odds = np.asarray(log_odds, dtype=float)
    half = Z90 * np.sqrt(np.clip(np.asarray(log_odds_var, dtype=float), 0.0, None))
    gap = np.abs(log_odds - np.asarray(reference, dtype=float))
    n = len(log_odds)
    if not n:
        return GoldCheck(items=0, coverage=None, ece=None, reliability=[], inflation=1.0, inflated_coverage=None)
    table, ece = reliability(expit(log_odds), truth, bins=5)
    coverage = float((gap <= half + 1e-12).mean())
    inflation = 1.0
    if n >= GOLD_CHECK_MIN_ITEMS and coverage < COVERAGE_FLOOR:
        inflation = float(INFLATION_GRID[-1])
        for factor in INFLATION_GRID:
            if (gap <= factor * half + 1e-12).mean() >= COVERAGE_TARGET:
                inflation = float(factor)
                break
    inflated = float((gap <= inflation * half + 1e-12).mean())
    return GoldCheck(
        items=n, coverage=coverage, ece=ece, reliability=table, inflation=inflation, inflated_coverage=inflated
    )


def settled_probability(log_odds: float, log_odds_var: float, inflation: float = 1.0) -> float:
    """How sure the posterior is of a pair's side, with the stopping bar raised by the gold check: P(positive)
    (or P(negative)) at the log-odds moved toward 0 by the extra half-width the inflation adds to its 90%
    interval. With inflation 1 it is max(P, 1 - P)."""
    extra = max(inflation - 1.0, 0.0) * Z90 * float(np.sqrt(max(log_odds_var, 0.0)))
    return float(expit(max(abs(log_odds) - extra, 0.0)))
