"""Posterior labels: a Bayesian two-coin Dawid-Skene model with gold, worker priors and a per-pair prior.

Each pair i is truly positive (z_i = 1) or not. Worker j says "positive" with probability s_j when it is
(sensitivity) and "negative" with probability t_j when it is not (specificity); s_j and t_j have Beta
priors centred on a careful worker, so a worker with two or three HITs is judged mostly by the prior and
a lone dissenter cannot overturn two agreeing workers (plain Dawid-Skene fits a confusion matrix to a
handful of answers and sometimes does). Gold pairs have a known z and teach the model about workers. The
pair's prior P(z_i = 1) is either one campaign-wide rate with a Beta prior, or a logistic model of the
machine annotators' evidence (rank, score, how many proposed it), fitted in the same EM on the gold and
the crowd's posteriors (the machine as a calibrated prior, not as a vote).

Item difficulty (`difficulty`, with the hierarchical prior): a negative the annotators ranked first looks like
a match, so careful workers call it positive more often than an easy negative (ECCV Caption, Table B.2). Each
pair has a difficulty class (its best rank: 1, 2-3, or anything else, gold among them); each worker has one
specificity per class, whose prior is the crowd's specificity on that class (learned from the answers that can
tell it), shrunk toward the requester's record as the crowd's own is. Gold negatives are never top-ranked,
so without classes the model learns its workers' specificity on easy negatives and trusts a "yes" on a
first-ranked negative too much.

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
from scipy.stats import binom

Z90 = 1.6448536269514722  # the two-sided 90% normal quantile
PRIOR_COUNT_FLOOR = 1.0


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
    # The machine prior cross-fitted in this many folds (by pair id): each pair's prior comes from a logistic model
    # fitted without its own fold, so a pair's answers cannot shape its own prior through the EM's feedback (q makes
    # the prior, the prior makes q), which made the prior surer than the machine evidence warrants. 0 or 1: one fit.
    prior_folds: int = 0


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
    # Item difficulty: each pair's class (0: ordinary) and each worker's specificity per class, shape (W, C, 2);
    # `spec` is class 0's (the only class when the fit had no difficulty classes). None: `spec` for every pair.
    pair_class: np.ndarray | None = None
    spec_by_class: np.ndarray | None = None
    machine_prior: bool = False  # whether each pair's prior is the machine annotators' model (features)

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

    def answer_weights(self, prow: np.ndarray, wrow: np.ndarray, verdicts: np.ndarray) -> np.ndarray:
        """The log-likelihood-ratio weight of each answer (pair row, worker row, verdict): the worker's
        weights on the pair's difficulty class."""
        if self.spec_by_class is None or self.pair_class is None:
            weight_yes, weight_no = self.weights()
            return np.where(verdicts > 0.5, weight_yes[wrow], weight_no[wrow])
        spec = self.spec_by_class[wrow, self.pair_class[prow]]
        total_s, total_t = self.sens[wrow].sum(1), spec.sum(1)
        log_s = digamma(self.sens[wrow, 0]) - digamma(total_s)
        log_1s = digamma(self.sens[wrow, 1]) - digamma(total_s)
        log_t = digamma(spec[:, 0]) - digamma(total_t)
        log_1t = digamma(spec[:, 1]) - digamma(total_t)
        return np.where(verdicts > 0.5, log_s - log_1t, log_1s - log_t)

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
    difficulty: dict[int, int] | None = None,
    pair_prior: dict[int, tuple[float, float]] | None = None,
) -> PosteriorFit:
    """Fit the model to binary verdicts: pair_ids[k], worker_ids[k] said verdicts[k] (True = positive).

    `known` maps a gold pair to its truth (it is not estimated, and it teaches the model about workers).
    `features` maps a pair to its machine-annotator features (same length for all); pairs without any get
    zeros. With features, the pair's prior is a logistic model of them; without, one campaign-wide rate.
    `difficulty` maps a pair to its difficulty class (0 ordinary, higher harder; absent: 0); it is read only
    with the hierarchical prior, which learns each class's specificity from the crowd (see the module docstring).
    `pair_prior` maps a pair to a fixed prior (log-odds, variance) that replaces the model's prior for that pair
    (a calibrated judge's P(yes): annotator.quality.selectors.judge_prior); the other pairs keep the model's.
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
    pair_class = np.zeros(n_pairs, dtype=np.int64)
    if difficulty and prior.hierarchical:
        pair_class = np.fromiter(
            (max(int(difficulty.get(int(pair), 0)), 0) for pair in all_pairs), dtype=np.int64, count=n_pairs
        )
    n_classes = int(pair_class.max()) + 1 if n_pairs else 1
    vclass = pair_class[prow]

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
        folds = max(int(prior.prior_folds), 1)
        fold_of = all_pairs % folds
        fold_coef = [np.zeros(width + 1) for _ in range(folds)]

    prior_log_odds = np.zeros(n_pairs)
    prior_var = np.zeros(n_pairs)
    fixed_rows = fixed_log_odds = fixed_var = None
    if pair_prior:
        placed = [(int(np.searchsorted(all_pairs, p)), v) for p, v in pair_prior.items()]
        placed = [(row, v) for row, v in placed if row < n_pairs and all_pairs[row] in pair_prior]
        fixed_rows = np.array([row for row, _ in placed], dtype=np.int64)
        fixed_log_odds = np.array([v[0] for _, v in placed], dtype=float)
        fixed_var = np.array([v[1] for _, v in placed], dtype=float)
    sens = np.zeros((n_workers, 2))
    spec = np.zeros((n_workers, 2))
    spec_by_class = np.zeros((n_workers, n_classes, 2))
    log_odds = np.zeros(n_pairs)
    crowd_prior = np.array([[a0, b0], [a0, b0]])
    class_prior = np.tile(crowd_prior[1], (n_classes, 1))
    # What can tell the crowd's accuracy: answers on pairs whose truth is known (gold), or that someone else
    # answered too. A pair's only answer agrees with the q it made itself, so counting it would make a crowd
    # that answers each pair once look flawless and settle every pair on one answer.
    informative = is_known[prow] | (answers[prow] >= 2)
    for _ in range(prior.iterations):
        # M-step: worker Beta posteriors and the pair prior.
        qv = q[prow]
        if prior.hierarchical:
            crowd_prior = _crowd_prior(qv[informative], verdicts[informative], prior)
            class_prior = _class_spec_prior(
                qv[informative], verdicts[informative], vclass[informative], n_classes, prior
            )
        # No worker starts from a J-shaped Beta: a prior count below one (a crowd 0.98 right on easy gold, worth ten
        # answers, leaves 0.2 for its errors) puts its mass at a zero error rate, E[log(1 - t)] falls to -6 and one
        # "yes" outweighs three "no"s. Each count is at least PRIOR_COUNT_FLOOR.
        crowd_prior = np.maximum(crowd_prior, PRIOR_COUNT_FLOOR)
        class_prior = np.maximum(class_prior, PRIOR_COUNT_FLOOR)
        (sa, sb), _ = crowd_prior
        sens[:, 0] = sa + np.bincount(wrow, weights=qv * verdicts, minlength=n_workers)
        sens[:, 1] = sb + np.bincount(wrow, weights=qv * (1 - verdicts), minlength=n_workers)
        cell = wrow * n_classes + vclass  # (worker, class), flattened
        size = n_workers * n_classes
        right_no = np.bincount(cell, weights=(1 - qv) * (1 - verdicts), minlength=size).reshape(n_workers, n_classes)
        wrong_yes = np.bincount(cell, weights=(1 - qv) * verdicts, minlength=size).reshape(n_workers, n_classes)
        spec_by_class[:, :, 0] = class_prior[None, :, 0] + right_no
        spec_by_class[:, :, 1] = class_prior[None, :, 1] + wrong_yes
        spec[:] = spec_by_class[:, 0]
        if design is not None and folds > 1:
            for fold in range(folds):
                held = (fold_of == fold) & ~is_known
                train = ~held
                fold_coef[fold], covariance = _logistic_fit(
                    design[train], q[train], np.ones(int(train.sum())), prior.ridge, fold_coef[fold]
                )
                prior_log_odds[held] = design[held] @ fold_coef[fold]
                prior_var[held] = np.einsum("ij,jk,ik->i", design[held], covariance, design[held])
        elif design is not None:
            coef, covariance = _logistic_fit(design, q, np.ones(n_pairs), prior.ridge, coef)
            prior_log_odds = design @ coef
            prior_var = np.einsum("ij,jk,ik->i", design, covariance, design)
        else:
            unknown = ~is_known
            alpha = prior.class_rate * prior.class_strength + q[unknown].sum()
            beta = (1 - prior.class_rate) * prior.class_strength + (1 - q[unknown]).sum()
            prior_log_odds = np.full(n_pairs, digamma(alpha) - digamma(beta))
            prior_var = np.full(n_pairs, trigamma(alpha) + trigamma(beta))
        if fixed_rows is not None:
            prior_log_odds[fixed_rows] = fixed_log_odds
            prior_var[fixed_rows] = fixed_var
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
            pair_class=pair_class,
            spec_by_class=spec_by_class,
        )
        contribution = fit.answer_weights(prow, wrow, verdicts)
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

    answer_spec = spec_by_class[wrow, vclass]
    var_yes = log_var(sens[wrow, 0], sens[wrow, 1]) + log_complement_var(answer_spec[:, 0], answer_spec[:, 1])
    var_no = log_complement_var(sens[wrow, 0], sens[wrow, 1]) + log_var(answer_spec[:, 0], answer_spec[:, 1])
    answer_var = np.where(verdicts > 0.5, var_yes, var_no)
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
        pair_class=pair_class,
        spec_by_class=spec_by_class,
        machine_prior=design is not None or fixed_rows is not None,
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


def _class_spec_prior(qv: np.ndarray, verdicts: np.ndarray, vclass: np.ndarray, n_classes: int, prior) -> np.ndarray:
    """Per difficulty class, the workers' shared Beta prior on specificity, as _crowd_prior's but on that class's
    answers only: the crowd's specificity there (each answer weighed by how likely its pair is negative), with a
    Beta prior centred on prior.worker_accuracy worth prior.crowd_strength answers; each worker starts from it
    with prior.worker_strength answers' weight. With one class it is _crowd_prior's specificity. Shape
    (classes, 2)."""
    centre, strength, weight = prior.worker_accuracy, prior.crowd_strength, prior.worker_strength
    negative = 1 - qv
    right = np.bincount(vclass, weights=negative * (1 - verdicts), minlength=n_classes)
    seen = np.bincount(vclass, weights=negative, minlength=n_classes)
    spec = (centre * strength + right) / (strength + seen)
    return np.stack([spec * weight, (1 - spec) * weight], axis=1)


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
    fit: PosteriorFit, *, worker_id: int, pair_ids=None, below: float = 0.7, without=(), machine_witness: bool = False
) -> WorkerEvidence:
    """The worker's accuracy on their answers (all of them, or those to `pair_ids`), judged against the
    rest of the evidence: each pair's posterior with this worker's own answer taken out (q_-j), so a
    worker cannot vouch for themselves; the answers of the workers in `without` (their collusion group,
    annotator.analysis.collusion) are taken out too, so they cannot vouch for each other. Likelihood of
    accuracy a for one answer: q_-j a + (1 - q_-j)(1 - a) when they said positive (and the mirror when
    negative); a uniform prior on a grid gives the posterior.
    Pairs the others are unsure of (q_-j near 0.5) say little either way; a pair nobody else answered
    (and whose truth is not known) is left out, since its q_-j rests on the class prior alone, which the
    worker's own answers shaped. With `machine_witness` and a machine prior in the fit, such a pair counts with
    q_-j the machine annotators' prior for it (the machine as one more witness, as the stopping rule counts it
    as one answer; a worker's few answers hardly move a model fitted on every pair): a worker who mostly answers
    pairs nobody else answered is judged on them too, not left with too few comparisons to be judged at all.
    """
    prow, wrow, verdicts = fit.votes
    matches = np.searchsorted(fit.workers, worker_id)
    if matches >= len(fit.workers) or fit.workers[matches] != worker_id:
        return WorkerEvidence(compared=0.0, accuracy=0.5, p_below=0.0, items=0)
    mine = wrow == matches
    if pair_ids is not None:
        wanted = np.isin(fit.pairs[prow], np.asarray(list(pair_ids), dtype=np.int64))
        mine &= wanted
    answer_weight = fit.answer_weights(prow, wrow, verdicts)
    partners = np.isin(fit.workers[wrow], np.asarray(list(without), dtype=np.int64)) & (wrow != matches)
    partner_weight = answer_weight
    partner_sum = np.bincount(prow[partners], weights=partner_weight[partners], minlength=len(fit.pairs))
    partner_answers = np.bincount(prow[partners], minlength=len(fit.pairs))
    witnessed = (fit.answers[prow] - partner_answers[prow] >= 2) | (np.abs(fit.log_odds[prow]) >= 50.0)
    if not (machine_witness and fit.machine_prior):
        mine &= witnessed
    if not mine.any():
        return WorkerEvidence(compared=0.0, accuracy=0.5, p_below=0.0, items=0)
    own = answer_weight[mine]
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
# The intervals are widened only when the coverage on gold falls short of COVERAGE_TARGET by more than a sample of that
# many items explains: P(this few covered | the intervals are right) below SHORTFALL_LEVEL (one-sided binomial). A
# fixed floor (0.85) widened on chance: with 20 gold pairs and right intervals, coverage is below 0.85 one time in
# eight, and each such campaign paid for answers it did not need.
SHORTFALL_LEVEL = 0.05
INFLATION_GRID = np.round(np.arange(1.0, 5.001, 0.25), 2)


@dataclass(frozen=True)
class GoldCheck:
    """The posterior scored on gold pairs as if their truth were unknown.

    `coverage`: the share of gold pairs whose *reference* P(positive) lies in the 90% interval. The reference
    weighs the same answers by each answering worker's accuracy on the *other* gold pairs (truth, not peer
    agreement), shrunk toward the crowd's gold accuracy; the check asks whether the posterior's interval holds
    what the truth about the workers says. `ece` and `reliability`: P(positive) against the gold truth.
    `inflation`: by how much the interval's half-width (on the log-odds) must grow for `COVERAGE_TARGET` of the
    gold pairs to be covered, when the shortfall is more than chance (SHORTFALL_LEVEL); 1.0 otherwise or with too few
    items. `shortfall_p`: P(coverage this low or lower | the intervals hold COVERAGE_TARGET), None without items."""

    items: int
    coverage: float | None
    ece: float | None
    reliability: list
    inflation: float
    inflated_coverage: float | None
    shortfall_p: float | None = None


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
    covered = int((gap <= half + 1e-12).sum())
    coverage = covered / n
    shortfall_p = float(binom.cdf(covered, n, COVERAGE_TARGET))
    inflation = 1.0
    if n >= GOLD_CHECK_MIN_ITEMS and shortfall_p < SHORTFALL_LEVEL:
        inflation = float(INFLATION_GRID[-1])
        for factor in INFLATION_GRID:
            if (gap <= factor * half + 1e-12).mean() >= COVERAGE_TARGET:
                inflation = float(factor)
                break
    inflated = float((gap <= inflation * half + 1e-12).mean())
    return GoldCheck(
        items=n,
        coverage=coverage,
        ece=ece,
        reliability=table,
        inflation=inflation,
        inflated_coverage=inflated,
        shortfall_p=shortfall_p,
    )


def settled_probability(log_odds: float, log_odds_var: float, inflation: float = 1.0) -> float:
    """How sure the posterior is of a pair's side, with the stopping bar raised by the gold check: P(positive)
    (or P(negative)) at the log-odds moved toward 0 by the extra half-width the inflation adds to its 90%
    interval. With inflation 1 it is max(P, 1 - P)."""
    extra = max(inflation - 1.0, 0.0) * Z90 * float(np.sqrt(max(log_odds_var, 0.0)))
    return float(expit(max(abs(log_odds) - extra, 0.0)))
