"""A vision-language judge's scores against the truth: Platt and isotonic calibration on gold (the one with
the lower k-fold Brier score is used), a reliability diagram, and Cohen's kappa with the crowd. Pure numpy: no
Django (annotator.quality.selectors.judging reads the rows)."""

from __future__ import annotations

import math

import numpy as np

RELIABILITY_BINS = 10
EPSILON = 1e-6
CV_FOLDS = 5  # k of the k-fold Brier scores that choose between Platt and isotonic (fewer when the gold is small)
CALIBRATION_METHODS = ("platt", "isotonic")


def _logit(scores: np.ndarray) -> np.ndarray:
    clipped = np.clip(np.asarray(scores, dtype=np.float64), EPSILON, 1 - EPSILON)
    return np.log(clipped / (1 - clipped))


def platt_fit(scores, truth, *, ridge: float = 1e-3, steps: int = 50) -> tuple[float, float]:
    """(a, b) of P(positive) = sigmoid(a * logit(score) + b), fitted by Newton's method on the log-likelihood
    (a small ridge keeps it finite when the gold is separable)."""
    x = _logit(scores)
    y = np.asarray(truth, dtype=np.float64)
    design = np.stack([x, np.ones_like(x)], axis=1)
    weights = np.zeros(2)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(design @ weights)))
        gradient = design.T @ (p - y) + ridge * weights
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + ridge * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(weights[0]), float(weights[1])


def platt_apply(scores, a: float, b: float) -> np.ndarray:
    return 1 / (1 + np.exp(-(a * _logit(scores) + b)))


def isotonic_fit(scores, truth) -> tuple[list[float], list[float]]:
    """Isotonic regression of the truth on the score (pool adjacent violators): the knots (x, y) of a
    non-decreasing map, each block of pooled scores giving two knots (its lowest and highest score) at the
    block's positive share. isotonic_apply interpolates between the knots and clips outside them."""
    order = np.argsort(np.asarray(scores, dtype=np.float64), kind="stable")
    x = np.asarray(scores, dtype=np.float64)[order]
    y = np.asarray(truth, dtype=np.float64)[order]
    blocks: list[list[float]] = []  # [sum of truth, count, lowest score, highest score]
    for xi, yi in zip(x, y, strict=True):
        if blocks and blocks[-1][3] == xi:  # tied scores share one value
            blocks[-1][0] += yi
            blocks[-1][1] += 1
        else:
            blocks.append([yi, 1.0, xi, xi])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            total, count, _, high = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
            blocks[-1][3] = high
    knots_x: list[float] = []
    knots_y: list[float] = []
    for total, count, low, high in blocks:
        for point in (low, high) if high > low else (low,):
            knots_x.append(float(point))
            knots_y.append(float(total / count))
    return knots_x, knots_y


def isotonic_apply(scores, knots_x, knots_y) -> np.ndarray:
    return np.interp(np.asarray(scores, dtype=np.float64), knots_x, knots_y)


def _fit(method: str, s: np.ndarray, y: np.ndarray) -> dict:
    if method == "platt":
        a, b = platt_fit(s, y)
        return {"a": a, "b": b}
    knots_x, knots_y = isotonic_fit(s, y)
    return {"knots_x": knots_x, "knots_y": knots_y}


def calibrated_probability(scores, calibration: dict) -> np.ndarray:
    """P(yes) of raw judge scores under a judge_calibration's chosen method (the raw score when the gold
    could not calibrate it)."""
    s = np.asarray(scores, dtype=np.float64)
    if not calibration.get("calibrated"):
        return s
    if calibration["method"] == "isotonic":
        return isotonic_apply(s, calibration["knots_x"], calibration["knots_y"])
    return platt_apply(s, calibration["a"], calibration["b"])


def stratified_folds(truth, k: int, *, seed: int = 0) -> np.ndarray:
    """A fold number per item: positives and negatives each dealt round-robin after a seeded shuffle, so
    every fold's training part holds both classes when k <= min(positives, negatives)."""
    y = np.asarray(truth, dtype=bool)
    rng = np.random.default_rng(seed)
    fold = np.zeros(len(y), dtype=np.int64)
    for side in (True, False):
        members = rng.permutation(np.flatnonzero(y == side))
        fold[members] = np.arange(len(members)) % k
    return fold


def cross_validated_brier(scores, truth, *, folds: int = CV_FOLDS, seed: int = 0) -> dict | None:
    """Out-of-sample Brier score and accuracy of each calibration method: k-fold on the gold (stratified),
    each fold predicted by a map fitted on the others. None when the gold has fewer than 2 of a class."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(truth, dtype=np.float64)
    k = min(folds, int(y.sum()), int(len(y) - y.sum()))
    if k < 2:
        return None
    fold = stratified_folds(y, k, seed=seed)
    report: dict = {"folds": k}
    for method in CALIBRATION_METHODS:
        predicted = np.zeros(len(s))
        for f in range(k):
            train, test = fold != f, fold == f
            params = _fit(method, s[train], y[train])
            predicted[test] = calibrated_probability(s[test], {"calibrated": True, "method": method, **params})
        report[method] = {
            "brier": float(((predicted - y) ** 2).mean()),
            "accuracy": float(((predicted >= 0.5) == (y == 1)).mean()),
        }
    return report


def reliability(probabilities, truth, *, bins: int = RELIABILITY_BINS) -> list[dict]:
    """Equal-width bins of the predicted probability: count, mean prediction and observed positive share of
    each non-empty bin (a calibrated judge's bins lie on the diagonal)."""
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(truth, dtype=np.float64)
    index = np.minimum((p * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        inside = index == b
        if inside.any():
            rows.append(
                {
                    "low": b / bins,
                    "high": (b + 1) / bins,
                    "count": int(inside.sum()),
                    "predicted": float(p[inside].mean()),
                    "observed": float(y[inside].mean()),
                }
            )
    return rows


def cohen_kappa(first, second) -> float | None:
    """Cohen's kappa of two yes/no raters on the same items; None when chance agreement is total."""
    a = np.asarray(first, dtype=bool)
    b = np.asarray(second, dtype=bool)
    if len(a) == 0:
        return None
    observed = float((a == b).mean())
    chance = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    return None if math.isclose(chance, 1.0) else (observed - chance) / (1 - chance)


def judge_calibration(scores, truth, *, bins: int = RELIABILITY_BINS, folds: int = CV_FOLDS) -> dict:
    """Both calibrations (Platt's a, b; isotonic's knots) fitted on all the gold pairs, their k-fold
    (out-of-sample) Brier scores side by side in `cv`, and the chosen `method`: the lower cross-validated
    Brier score (Platt on a tie, or when the gold is too small to cross-validate). `brier`, `accuracy` and
    `reliability` are the chosen map's, in-sample; `calibrated` False (and no map) when the gold lacks a
    positive or a negative."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(truth, dtype=np.float64)
    report = {
        "gold": len(s),
        "positives": int(y.sum()),
        "brier_raw": float(((s - y) ** 2).mean()) if len(s) else None,
        "raw": reliability(s, y, bins=bins),
        "accuracy_raw": float(((s >= 0.5) == (y == 1)).mean()) if len(s) else None,
    }
    if len(s) < 2 or y.min() == y.max():
        return {**report, "calibrated": False}
    cv = cross_validated_brier(s, y, folds=folds)
    method = "isotonic" if cv and cv["isotonic"]["brier"] < cv["platt"]["brier"] else "platt"
    report = {**report, "calibrated": True, "method": method, "cv": cv}
    report.update(_fit("platt", s, y))
    report.update(_fit("isotonic", s, y))
    p = calibrated_probability(s, report)
    return {
        **report,
        "brier": float(((p - y) ** 2).mean()),
        "accuracy": float(((p >= 0.5) == (y == 1)).mean()),
        "reliability": reliability(p, y, bins=bins),
    }
