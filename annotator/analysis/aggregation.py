"""Pure aggregation of crowd answers into labels (no Django): majority, gold-weighted, Dawid-Skene, mean.

Every method returns {pair_id: AggregatedLabel}. `confidence` is the confidence in the positive/negative
decision (is_positive), in [0.5, 1] for the voting methods: the winning side's share of the (weighted)
votes, or the Dawid-Skene posterior of that side. Every four-choice label carries P(positive) and a 90%
interval of it (`with_intervals`). Positive = "100% YES" or "Partially YES" (ECCV Caption);
strict positive = the label's choice is "100% YES". For the 0-5 similarity scale (Crisscrossed Captions)
the label is the mean, positive at >= 3, strict positive at >= 4.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from math import log

POSITIVE = ("yes", "partially_yes")
NEGATIVE = ("mostly_no", "no")
CHOICES = ("yes", "partially_yes", "mostly_no", "no")  # from most to least positive
SIMILARITY_STRICT_AT = 4.0


@dataclass(frozen=True)
class Vote:
    pair_id: int
    worker_id: int
    choice: str = ""  # four_choice
    score: float | None = None  # similarity


@dataclass(frozen=True)
class AggregatedLabel:
    choice: str
    score: float | None
    is_positive: bool
    is_positive_strict: bool
    confidence: float
    answer_count: int
    probability: float | None = None  # P(positive)
    probability_low: float | None = None  # its 90% interval, where the method gives one
    probability_high: float | None = None
    score_low: float | None = None  # the 90% interval of a similarity mean
    score_high: float | None = None


def _decide(weights_by_choice: dict[str, float], count: int) -> AggregatedLabel:
    """Positive/negative by weighted vote (a tie is negative: unproven), then the side's top choice."""
    positive = sum(weights_by_choice.get(c, 0.0) for c in POSITIVE)
    negative = sum(weights_by_choice.get(c, 0.0) for c in NEGATIVE)
    total = positive + negative
    is_positive = positive > negative
    confidence = (max(positive, negative) / total) if total > 0 else 0.5
    side = POSITIVE if is_positive else NEGATIVE
    # The most supported choice on the winning side; ties go to the milder one (partially/mostly).
    choice = max(side, key=lambda c: (weights_by_choice.get(c, 0.0), c in ("partially_yes", "mostly_no")))
    return AggregatedLabel(
        choice=choice,
        score=None,
        is_positive=is_positive,
        is_positive_strict=is_positive and choice == "yes",
        confidence=confidence,
        answer_count=count,
        probability=(positive / total) if total > 0 else 0.5,
    )


def majority_vote(votes: list[Vote]) -> dict[int, AggregatedLabel]:
    """One worker, one vote."""
    return with_intervals(weighted_vote(votes, weights={}), votes)


def worker_weight_from_gold(correct: int, total: int) -> float:
    """The log-odds weight of a worker whose gold accuracy has Beta(1, 1) posterior mean p.

    log(p / (1 - p)) is the optimal weight of a symmetric binary voter (Nitzan and Paroush 1982); a worker
    no better than a coin gets weight 0, never a negative one (we do not trust an adversary's inversion).
    """
    p = (correct + 1.0) / (total + 2.0)
    p = min(max(p, 0.01), 0.99)
    return max(log(p / (1.0 - p)), 0.0)


def weighted_vote(votes: list[Vote], *, weights: dict[int, float]) -> dict[int, AggregatedLabel]:
    """Votes weighted per worker (missing workers weigh 1); when every weight of a pair is 0, one each."""
    by_pair: dict[int, list[Vote]] = defaultdict(list)
    for vote in votes:
        if vote.choice:
            by_pair[vote.pair_id].append(vote)
    labels = {}
    for pair_id, pair_votes in by_pair.items():
        tally: dict[str, float] = defaultdict(float)
        for vote in pair_votes:
            tally[vote.choice] += weights.get(vote.worker_id, 1.0)
        if sum(tally.values()) <= 0:
            tally = defaultdict(float, Counter(vote.choice for vote in pair_votes))
        labels[pair_id] = _decide(tally, len(pair_votes))
    return labels


def gold_weighted_vote(votes: list[Vote], *, gold: dict[int, tuple[int, int]]) -> dict[int, AggregatedLabel]:
    """Votes weighted by each worker's gold accuracy: `gold` maps worker id to (correct, total)."""
    weights = {worker_id: worker_weight_from_gold(*counts) for worker_id, counts in gold.items()}
    return with_intervals(weighted_vote(votes, weights=weights), votes)


def dawid_skene(votes: list[Vote], *, n_iter: int = 100, tol: float = 1e-5) -> dict[int, AggregatedLabel]:
    """Dawid-Skene (1979) over the four choices, by crowd-kit; confidence from the class posteriors."""
    import pandas as pd

    rows = [(vote.pair_id, vote.worker_id, vote.choice) for vote in votes if vote.choice]
    if not rows:
        return {}
    labels = dawid_skene_frame(pd.DataFrame(rows, columns=["task", "worker", "label"]), n_iter=n_iter, tol=tol)
    return with_intervals(labels, votes)


def dawid_skene_frame(frame, *, n_iter: int = 100, tol: float = 1e-5) -> dict[int, AggregatedLabel]:
    """Dawid-Skene on a pandas frame with columns task, worker, label (the four choice values)."""
    from crowdkit.aggregation import DawidSkene

    return crowdkit_frame(frame, DawidSkene(n_iter=n_iter, tol=tol))


def crowdkit_model(name: str, votes: list[Vote]) -> dict[int, AggregatedLabel]:
    """One of crowd-kit's models over the four choices: `glad`, `mace` or `wawa`."""
    import pandas as pd
    from crowdkit.aggregation import GLAD, MACE, Wawa
    from sklearn.utils import Tags, TargetTags

    class TaggedWawa(Wawa):
        """crowd-kit's Wawa asks scikit-learn whether it is fitted, and scikit-learn >= 1.7 needs the tags
        that its own estimators inherit (without them every Wawa fit raises AttributeError)."""

        def __sklearn_tags__(self):
            return Tags(estimator_type=None, target_tags=TargetTags(required=False))

    models = {"glad": lambda: GLAD(n_iter=50), "mace": lambda: MACE(n_restarts=3, n_iter=50), "wawa": TaggedWawa}
    rows = [(vote.pair_id, vote.worker_id, vote.choice) for vote in votes if vote.choice]
    if not rows:
        return {}
    labels = crowdkit_frame(pd.DataFrame(rows, columns=["task", "worker", "label"]), models[name]())
    return with_intervals(labels, votes)


def crowdkit_frame(frame, model) -> dict[int, AggregatedLabel]:
    """Labels from a crowd-kit model's class posteriors over the four choices."""
    import numpy as np

    counts = frame.groupby("task").size()
    proba = model.fit_predict_proba(frame)
    columns = list(proba.columns)
    values = proba.to_numpy()
    zeros = np.zeros(len(proba))
    column = {c: (values[:, columns.index(c)] if c in columns else zeros) for c in CHOICES}
    p_positive = column["yes"] + column["partially_yes"]
    answer_counts = counts.reindex(proba.index).to_numpy()
    labels = {}
    for row, task in enumerate(proba.index.tolist()):
        positive = float(p_positive[row])
        is_positive = positive > 0.5
        side = POSITIVE if is_positive else NEGATIVE
        choice = max(side, key=lambda c: column[c][row])
        labels[int(task)] = AggregatedLabel(
            choice=choice,
            score=None,
            is_positive=is_positive,
            is_positive_strict=is_positive and choice == "yes",
            confidence=min(max(positive, 1.0 - positive), 1.0),
            answer_count=int(answer_counts[row]),
            probability=min(max(positive, 0.0), 1.0),
        )
    return labels


def with_intervals(labels: dict[int, AggregatedLabel], votes: list[Vote]) -> dict[int, AggregatedLabel]:
    """The labels with a 90% interval of their P(positive), however the method reached it.

    The interval says what the answers support given how well their workers are known, as in
    `posterior.fit_posterior`: each worker's sensitivity and specificity get a Beta(1, 1) prior plus the soft
    counts of their answers under the method's own P(positive) of every pair (a pair the method calls 0.9
    positive adds 0.9 of a "positive" case to each of its workers), and the class rate a Beta(1, 1) prior plus
    the soft count of positives. A pair's log-odds is the class term plus one term per answer, E[log s /
    (1 - t)] for a "positive" and E[log (1 - s) / t] for a "negative" (digamma), each with its variance
    (trigamma); the normal interval on the log-odds is mapped back through the logistic function and widened,
    where needed, to hold the method's own P(positive) (a method sure after two answers per worker, as
    Dawid-Skene can be, keeps its estimate; the interval shows how little the workers' records say).
    A pair answered by workers with many answers gets a narrow interval, one resting on newcomers a wide one.
    """
    import numpy as np
    from scipy.special import digamma, expit

    from annotator.analysis.posterior import Z90, trigamma

    answered = [vote for vote in votes if vote.choice and vote.pair_id in labels]
    if not answered:
        return labels
    pair_ids = np.fromiter((vote.pair_id for vote in answered), dtype=np.int64, count=len(answered))
    worker_ids = np.fromiter((vote.worker_id for vote in answered), dtype=np.int64, count=len(answered))
    said_positive = np.fromiter((vote.choice in POSITIVE for vote in answered), dtype=float, count=len(answered))
    pairs, prow = np.unique(pair_ids, return_inverse=True)
    workers, wrow = np.unique(worker_ids, return_inverse=True)
    probability = np.array([labels[int(pair)].probability for pair in pairs], dtype=float)
    q = probability[prow]
    n = len(workers)
    # Beta parameters: sensitivity s ~ (says yes | positive, says no | positive), specificity t ~ (no | negative,
    # yes | negative).
    s_yes = 1.0 + np.bincount(wrow, weights=q * said_positive, minlength=n)
    s_no = 1.0 + np.bincount(wrow, weights=q * (1 - said_positive), minlength=n)
    t_no = 1.0 + np.bincount(wrow, weights=(1 - q) * (1 - said_positive), minlength=n)
    t_yes = 1.0 + np.bincount(wrow, weights=(1 - q) * said_positive, minlength=n)

    s_all, t_all = digamma(s_yes + s_no), digamma(t_no + t_yes)
    weight_yes = (digamma(s_yes) - s_all) - (digamma(t_yes) - t_all)
    weight_no = (digamma(s_no) - s_all) - (digamma(t_no) - t_all)
    s_var, t_var = trigamma(s_yes + s_no), trigamma(t_no + t_yes)
    var_yes = trigamma(s_yes) - s_var + trigamma(t_yes) - t_var
    var_no = trigamma(s_no) - s_var + trigamma(t_no) - t_var
    is_yes = said_positive > 0.5
    positives, negatives = 1.0 + probability.sum(), 1.0 + (1 - probability).sum()
    log_odds = (digamma(positives) - digamma(negatives)) + np.bincount(
        prow, weights=np.where(is_yes, weight_yes[wrow], weight_no[wrow]), minlength=len(pairs)
    )
    variance = (trigamma(positives) + trigamma(negatives)) + np.bincount(
        prow, weights=np.where(is_yes, var_yes[wrow], var_no[wrow]), minlength=len(pairs)
    )
    half = Z90 * np.sqrt(variance)
    low = np.minimum(expit(log_odds - half), probability)
    high = np.maximum(expit(log_odds + half), probability)
    intervals = {int(pair): (float(low[row]), float(high[row])) for row, pair in enumerate(pairs)}
    return {
        pair_id: replace(label, probability_low=intervals[pair_id][0], probability_high=intervals[pair_id][1])
        if pair_id in intervals
        else label
        for pair_id, label in labels.items()
    }


def mean_score(votes: list[Vote], *, positive_at: float, prior_sd: float = 1.0) -> dict[int, AggregatedLabel]:
    """Similarity: the mean 0-5 rating with its standard error; confidence = share of ratings on the mean's
    side of `positive_at`, the campaign's own (Campaign.positive_at: CxC's 3, 2.5 for image pairs, or the
    requester's), so no default here.

    The 90% interval of the mean is Student's t with the pair's own spread, except that the spread is
    pooled with a prior standard deviation `prior_sd` (one pseudo-rating), so two identical ratings do not
    claim a zero-width interval. P(positive) is P(true mean >= positive_at) under that t distribution.
    """
    from scipy import stats

    by_pair: dict[int, list[float]] = defaultdict(list)
    for vote in votes:
        if vote.score is not None:
            by_pair[vote.pair_id].append(float(vote.score))
    labels = {}
    for pair_id, scores in by_pair.items():
        n = len(scores)
        mean = sum(scores) / n
        squares = sum((s - mean) ** 2 for s in scores)
        sd = ((squares + prior_sd**2) / n) ** 0.5  # n - 1 degrees of freedom plus the prior's one
        se = sd / n**0.5
        t = stats.t.ppf(0.95, df=n)
        is_positive = mean >= positive_at
        agreeing = sum(1 for s in scores if (s >= positive_at) == is_positive)
        labels[pair_id] = AggregatedLabel(
            choice="",
            score=mean,
            is_positive=is_positive,
            is_positive_strict=mean >= SIMILARITY_STRICT_AT,
            confidence=agreeing / n,
            answer_count=n,
            probability=float(stats.t.cdf((mean - positive_at) / se, df=n)),
            score_low=max(mean - t * se, 0.0),
            score_high=min(mean + t * se, 5.0),
        )
    return labels
