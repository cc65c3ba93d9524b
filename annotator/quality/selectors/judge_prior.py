"""The vision-language judge as the machine prior of model-assisted redundancy.

With QUALITY_POSTERIOR_JUDGE_PRIOR on (off by default: docs/ranking.md has the measurement), when a campaign
has a succeeded judge run (RankingRun.judges; annotator.quality.selectors.judging.latest_judge_run)
and its machine prior is on, each pair the judge scored starts from the judge's calibrated P(yes) on the
campaign's gold (Platt or isotonic, whichever has the lower k-fold Brier score: annotator.analysis.judge):
prior log-odds logit(P), P clipped to [1/(n+2), (n+1)/(n+2)] for n gold pairs (a map fitted on n pairs claims
no more), and variance 1/(n P (1-P)), the delta-method variance of the logit of a share estimated from n pairs.
Other pairs, and every pair of a campaign without a judge run or whose gold lacks a positive or a negative,
keep the machine annotators' logistic model (annotator.quality.selectors.posterior.machine_features).
"""

from __future__ import annotations

import numpy as np

from annotator.analysis.judge import calibrated_probability
from annotator.campaigns.models.campaign import Campaign
from annotator.quality.selectors.judging import judge_scores, latest_judge_run


def judge_pair_prior(*, campaign: Campaign, pair_ids=None) -> dict[int, tuple[float, float]] | None:
    """Per pair the judge scored (of pair_ids, when given): (prior log-odds, prior variance) from the
    calibrated judge; None without a succeeded judge run or a calibration (see the module docstring)."""
    run = latest_judge_run(campaign=campaign)
    if run is None:
        return None
    score_of, calibration = judge_scores(campaign=campaign, run=run)
    if not calibration["calibrated"]:
        return None
    if pair_ids is not None:
        wanted = set(pair_ids)
        score_of = {pair: score for pair, score in score_of.items() if pair in wanted}
    if not score_of:
        return None
    n = calibration["gold"]
    pairs = list(score_of)
    p = calibrated_probability([score_of[pair] for pair in pairs], calibration)
    p = np.clip(p, 1 / (n + 2), (n + 1) / (n + 2))
    log_odds = np.log(p / (1 - p))
    variance = 1 / (n * p * (1 - p))
    return {pair: (float(lo), float(v)) for pair, lo, v in zip(pairs, log_odds, variance, strict=True)}
