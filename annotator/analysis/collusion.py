"""Collusion: workers whose answers agree with one another far above what their accuracy and the items explain.

Null model (what independent workers do): given a pair's truth, each worker answers on their own. Worker j
puts a truly positive pair on the positive side ("100% YES" or "Partially YES") with probability s_j
(sensitivity) and a negative one on the negative side with probability t_j (specificity), and within a side
picks the extreme answer ("100% YES", "100% NO") with their own share e_j+ or e_j-. So two workers A and B
give the same one of the four answers to pairs whose truths are x and y with probability

    m = pA(x) pB(y) [eA+ eB+ + (1 - eA+)(1 - eB+)] + (1 - pA(x))(1 - pB(y)) [eA- eB- + (1 - eA-)(1 - eB-)]

where pj(positive) = s_j and pj(negative) = 1 - t_j; the truths are weighted by each pair's P(positive)
without the two workers' own answers. Two tests compare the observed number of identical answers with
this:

- `position`: the same answer sequence by HIT position. A's HITs and B's HITs that the other did not do are
  paired in a fixed order (so each answer is compared once), and the answers at the same position of two
  different pairs are compared. Independent workers on different pairs agree only as the two pairs'
  truths allow; a shared answer sheet read by position agrees everywhere.
- `shared_items`: the same answer to the same (non-gold) pair.

The parameters are not known, so the test is strict: each comparison's m is the *largest* over a
credible box of every parameter (the central `credible` interval of each Beta posterior; m is multilinear
in them, so the maximum is at a corner), which is the agreement of the most alike workers the evidence
allows. Two workers 95% right agree on about 90% of pairs; with their accuracy at the top of its
interval the expected agreement is higher still, so they are not flagged. The number of identical answers
under independent comparisons with probabilities m_i is Poisson-binomial; the exact upper tail
P(K >= observed) is the p-value, and a couple of workers is flagged when it is below `level` divided by the
number of tests run (Bonferroni over all couples and both tests: the family-wise chance of flagging anyone
independent stays below `level`). Flagged couples are joined into groups (connected components).

Pure numpy and scipy; no Django.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from scipy.stats import beta as beta_distribution

POSITIVE_SIDE = ("yes", "partially_yes")
NEGATIVE_SIDE = ("mostly_no", "no")
EXTREME = ("yes", "no")
TESTS = ("position", "shared_items")


@dataclass(frozen=True)
class AnswerRow:
    """One answer: who, where (HIT and position), to which pair, which of the four choices, and the answer's
    own weight in the pair's log-odds (0 when the fit did not use it)."""

    worker: int
    hit: int
    position: int
    pair: int
    choice: str
    weight: float = 0.0
    gold: bool = False


@dataclass(frozen=True)
class WorkerModel:
    """A worker's Beta posteriors (alpha, beta) of sensitivity and specificity, from the crowd's fit."""

    sens: tuple[float, float] = (1.0, 1.0)
    spec: tuple[float, float] = (1.0, 1.0)


@dataclass(frozen=True)
class CoupleEvidence:
    """Why two workers were flagged: `matched` identical answers out of `compared`, where independent
    workers give at most `expected` on average; `p_value` = P(at least `matched`) under that."""

    workers: tuple[int, int]
    test: str
    compared: int
    matched: int
    expected: float
    p_value: float
    pairs: tuple[int, ...]  # the pairs compared (both sides' for `position`)
    hits: tuple[int, ...]

    @property
    def statistic(self) -> float:
        """-log10 of the p-value: how many orders of magnitude beyond chance."""
        return float(-np.log10(max(self.p_value, 1e-300)))


@dataclass(frozen=True)
class CollusionGroup:
    workers: tuple[int, ...]
    evidence: tuple[CoupleEvidence, ...]

    @property
    def strongest(self) -> CoupleEvidence:
        return min(self.evidence, key=lambda e: e.p_value)


def poisson_binomial_tail(probabilities, observed: int) -> float:
    """P(K >= observed) for K the number of successes of independent trials with these probabilities."""
    probabilities = np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)
    if observed <= 0:
        return 1.0
    if observed > len(probabilities):
        return 0.0
    distribution = np.zeros(len(probabilities) + 1)
    distribution[0] = 1.0
    for k, p in enumerate(probabilities, start=1):
        distribution[1 : k + 1] = distribution[1 : k + 1] * (1 - p) + distribution[:k] * p
        distribution[0] *= 1 - p
    return float(min(max(distribution[observed:].sum(), 0.0), 1.0))


def _interval(alpha: float, beta: float, credible: float) -> tuple[float, float]:
    tail = (1 - credible) / 2
    return float(beta_distribution.ppf(tail, alpha, beta)), float(beta_distribution.ppf(1 - tail, alpha, beta))


@dataclass(frozen=True)
class _Box:
    """The credible box of one worker: (low, high) of s, t, e+ and e-."""

    sens: tuple[float, float]
    spec: tuple[float, float]
    extreme_pos: tuple[float, float]
    extreme_neg: tuple[float, float]

    def corners(self) -> np.ndarray:
        """Every corner, one row each: s, t, e+, e-."""
        return np.array(list(itertools.product(self.sens, self.spec, self.extreme_pos, self.extreme_neg)))


def _box(model: WorkerModel, choices: list[str], credible: float) -> _Box:
    counts = defaultdict(int)
    for choice in choices:
        counts[choice] += 1
    return _Box(
        sens=_interval(*model.sens, credible),
        spec=_interval(*model.spec, credible),
        extreme_pos=_interval(1 + counts["yes"], 1 + counts["partially_yes"], credible),
        extreme_neg=_interval(1 + counts["no"], 1 + counts["mostly_no"], credible),
    )


def match_bound(box_a: _Box, box_b: _Box, q_a, q_b, same_pair: bool) -> np.ndarray:
    """The largest probability, over both workers' credible boxes, that A and B give the same answer, per
    comparison: A answers a pair with P(positive) q_a, B one with q_b (the same pair when `same_pair`)."""
    q_a = np.asarray(q_a, dtype=float)[:, None]
    q_b = np.asarray(q_b, dtype=float)[:, None]
    corners_a, corners_b = box_a.corners(), box_b.corners()
    # every combination of A's corner and B's corner: (C, 4) each
    a = np.repeat(corners_a, len(corners_b), axis=0)
    b = np.tile(corners_b, (len(corners_a), 1))
    same_pos = a[:, 2] * b[:, 2] + (1 - a[:, 2]) * (1 - b[:, 2])
    same_neg = a[:, 3] * b[:, 3] + (1 - a[:, 3]) * (1 - b[:, 3])

    def same(pa, pb):  # P(identical answer) given each one's P(positive side)
        return pa * pb * same_pos + (1 - pa) * (1 - pb) * same_neg

    pos_a, neg_a = a[:, 0], 1 - a[:, 1]  # P(positive side | truth positive / negative)
    pos_b, neg_b = b[:, 0], 1 - b[:, 1]
    if same_pair:
        m = q_a * same(pos_a, pos_b) + (1 - q_a) * same(neg_a, neg_b)
    else:
        m = (
            q_a * q_b * same(pos_a, pos_b)
            + q_a * (1 - q_b) * same(pos_a, neg_b)
            + (1 - q_a) * q_b * same(neg_a, pos_b)
            + (1 - q_a) * (1 - q_b) * same(neg_a, neg_b)
        )
    return m.max(axis=1)


def collusion_groups(
    *,
    answers: list[AnswerRow],
    log_odds: dict[int, float],
    workers: dict[int, WorkerModel],
    level: float = 1e-3,
    min_compared: int = 10,
    credible: float = 0.95,
) -> list[CollusionGroup]:
    """The groups of workers whose answers agree beyond chance (see the module docstring).

    `log_odds` is each pair's log-odds of being positive in the crowd's fit (a gold pair's is +-50 or
    beyond); an answer's own `weight` is taken out of it, so neither worker of a couple vouches for their own
    answers. A couple with fewer than `min_compared` comparisons in a test is not tested by it.
    """
    by_worker: dict[int, list[AnswerRow]] = defaultdict(list)
    for row in answers:
        if row.choice in POSITIVE_SIDE or row.choice in NEGATIVE_SIDE:
            by_worker[row.worker].append(row)

    def q(pair: int, *weights: float) -> float:
        value = log_odds.get(pair, 0.0)
        if abs(value) >= 50.0:
            return 1.0 if value > 0 else 0.0  # a gold pair: its truth is known
        return float(expit(value - sum(weights)))

    def box(worker: int, other: int) -> _Box:
        """The worker's credible box judged without the candidate pairs the other worker answered too: a
        couple's shared pairs follow their two answers in the crowd's fit, so counting them would let two
        workers vouch for each other's accuracy, and then for their agreement."""
        theirs = {r.pair for r in by_worker[other] if not r.gold}
        rows = by_worker[worker]
        own = [r for r in rows if r.pair not in theirs]
        if len(own) == len(rows) or len(own) < min_compared:
            # Nothing shared, or too little apart to judge the worker by: the crowd's fit is all there is.
            return _box(workers.get(worker, WorkerModel()), [r.choice for r in rows], credible)
        return _box(_model_from(rows=own, q=q), [r.choice for r in rows], credible)

    candidates: list[CoupleEvidence] = []
    ids = sorted(by_worker)
    for worker_a, worker_b in itertools.combinations(ids, 2):
        rows_a, rows_b = by_worker[worker_a], by_worker[worker_b]
        boxes = {worker_a: box(worker_a, worker_b), worker_b: box(worker_b, worker_a)}
        for test in TESTS:
            if test == "shared_items":
                mine = {r.pair: r for r in rows_a if not r.gold}
                compared = [(mine[r.pair], r) for r in rows_b if not r.gold and r.pair in mine]
                if len(compared) < min_compared:
                    continue
                q_a = [q(a.pair, a.weight, b.weight) for a, b in compared]
                bound = match_bound(boxes[worker_a], boxes[worker_b], q_a, q_a, same_pair=True)
            else:
                compared = _aligned_by_position(rows_a, rows_b)
                if len(compared) < min_compared:
                    continue
                q_a = [q(a.pair, a.weight) for a, _ in compared]
                q_b = [q(b.pair, b.weight) for _, b in compared]
                bound = match_bound(boxes[worker_a], boxes[worker_b], q_a, q_b, same_pair=False)
            matched = sum(1 for a, b in compared if a.choice == b.choice)
            candidates.append(
                CoupleEvidence(
                    workers=(worker_a, worker_b),
                    test=test,
                    compared=len(compared),
                    matched=matched,
                    expected=float(bound.sum()),
                    p_value=poisson_binomial_tail(bound, matched),
                    pairs=tuple(sorted({a.pair for a, _ in compared} | {b.pair for _, b in compared})),
                    hits=tuple(sorted({a.hit for a, _ in compared} | {b.hit for _, b in compared})),
                )
            )
    tests_run = max(len(candidates), 1)
    flagged = [e for e in candidates if e.p_value < level / tests_run]
    return _groups(flagged)


def _model_from(*, rows: list[AnswerRow], q) -> WorkerModel:
    """A worker's Beta posteriors of sensitivity and specificity from `rows` alone, under a uniform prior: each
    answer counts toward the side of its pair's truth, weighed by the pair's P(positive) without that answer."""
    sens, spec = [1.0, 1.0], [1.0, 1.0]
    for row in rows:
        positive = row.choice in POSITIVE_SIDE
        p = q(row.pair, row.weight)
        sens[0 if positive else 1] += p
        spec[1 if positive else 0] += 1 - p
    return WorkerModel(sens=(sens[0], sens[1]), spec=(spec[0], spec[1]))


def _aligned_by_position(rows_a: list[AnswerRow], rows_b: list[AnswerRow]) -> list[tuple[AnswerRow, AnswerRow]]:
    """A's and B's answers at the same position of paired HITs: the HITs only one of them did, A's k-th with
    B's k-th in HIT order; a position holding the same pair in both is left out (its truth is shared)."""
    hits_a: dict[int, dict[int, AnswerRow]] = defaultdict(dict)
    hits_b: dict[int, dict[int, AnswerRow]] = defaultdict(dict)
    for row in rows_a:
        hits_a[row.hit][row.position] = row
    for row in rows_b:
        hits_b[row.hit][row.position] = row
    both = set(hits_a) & set(hits_b)
    only_a = [hits_a[h] for h in sorted(hits_a) if h not in both]
    only_b = [hits_b[h] for h in sorted(hits_b) if h not in both]
    compared = []
    for sheet_a, sheet_b in zip(only_a, only_b, strict=False):
        for position in sorted(set(sheet_a) & set(sheet_b)):
            a, b = sheet_a[position], sheet_b[position]
            if a.pair != b.pair:
                compared.append((a, b))
    return compared


def _groups(flagged: list[CoupleEvidence]) -> list[CollusionGroup]:
    parent: dict[int, int] = {}

    def root(worker: int) -> int:
        parent.setdefault(worker, worker)
        while parent[worker] != worker:
            parent[worker] = parent[parent[worker]]
            worker = parent[worker]
        return worker

    for evidence in flagged:
        parent[root(evidence.workers[0])] = root(evidence.workers[1])
    members: dict[int, set[int]] = defaultdict(set)
    evidence_of: dict[int, list[CoupleEvidence]] = defaultdict(list)
    for evidence in flagged:
        top = root(evidence.workers[0])
        members[top].update(evidence.workers)
        evidence_of[top].append(evidence)
    groups = [
        CollusionGroup(workers=tuple(sorted(members[top])), evidence=tuple(sorted(evidence_of[top], key=_order)))
        for top in members
    ]
    return sorted(groups, key=lambda g: g.workers)


def _order(evidence: CoupleEvidence):
    return (evidence.p_value, evidence.workers, evidence.test)
