"""How well a captioning metric agrees with people (seed 002's Table 1, ECCV Caption's App. D.1): Kendall's
tau-b and Spearman's r between a metric's score of each judged image-caption pair and the human judgement of
it (a 0-5 rating, or a verified label as 1 / 0.5 / 0), with 95% bootstrap intervals.

The pairs of one image are not independent (the same references score them all), so the bootstrap resamples
images with replacement and keeps each drawn image's pairs together. Pure numpy and scipy over
(image, metric score, human score) rows; no ORM.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np
from scipy.stats import kendalltau, spearmanr


def _correlations(metric: np.ndarray, human: np.ndarray) -> tuple[float | None, float | None]:
    if len(metric) < 3 or np.all(metric == metric[0]) or np.all(human == human[0]):
        return None, None
    tau = float(kendalltau(metric, human).statistic)  # tau-b: ties on either side are counted
    rho = float(spearmanr(metric, human).statistic)
    return (tau if np.isfinite(tau) else None), (rho if np.isfinite(rho) else None)


def metric_human_correlation(
    rows: Iterable[tuple[object, float, float]], *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict:
    """{"kendall": {"value", "low", "high"}, "spearman": {...}, "pairs", "images", "resamples"} of
    (image, metric score, human score) rows. A value is None when it cannot be computed (fewer than 3
    pairs, or every metric or every human score equal). The same rows and seed give the same numbers."""
    by_image: dict[object, list[tuple[float, float]]] = defaultdict(list)
    for image, metric, human in rows:
        by_image[image].append((float(metric), float(human)))
    images = sorted(by_image, key=str)
    groups = [np.asarray(by_image[image], dtype=np.float64) for image in images]
    flat = np.concatenate(groups) if groups else np.zeros((0, 2))
    tau, rho = _correlations(flat[:, 0], flat[:, 1]) if len(flat) else (None, None)
    taus, rhos = [], []
    rng = np.random.default_rng(seed)
    for _ in range(resamples if len(images) >= 2 and tau is not None else 0):
        drawn = np.concatenate([groups[i] for i in rng.integers(len(images), size=len(images))])
        t, r = _correlations(drawn[:, 0], drawn[:, 1])
        if t is not None and r is not None:
            taus.append(t)
            rhos.append(r)
    tail = (1.0 - confidence) / 2 * 100

    def cell(value, samples):
        if value is None or not samples:
            return {"value": value, "low": None, "high": None}
        return {
            "value": value,
            "low": float(np.percentile(samples, tail)),
            "high": float(np.percentile(samples, 100 - tail)),
        }

    return {
        "kendall": cell(tau, taus),
        "spearman": cell(rho, rhos),
        "pairs": int(len(flat)),
        "images": len(images),
        "resamples": len(taus),
    }
