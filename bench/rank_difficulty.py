"""Item difficulty by rank in the posterior (annotator.analysis.posterior, `difficulty`): flat against rank classes.

Pure numpy, no database: simulated crowds whose careful workers err more on the negatives of every third pair
(the pairs an annotator ranked first), with easy gold (never top-ranked, as a campaign's is). For each crowd and
seed it fits the label posterior (hierarchical prior) without and with the pairs' difficulty classes and prints
label accuracy (all pairs, hard pairs), the share of 90% intervals holding the oracle probability (each worker's
true sensitivity and specificity on that pair, the true class rate), and the hard pairs' calibration error.

    .venv/bin/python bench/rank_difficulty.py [--seeds 5]

Crowds: `weak` (careful 0.75-0.85, 0.10 worse on hard negatives, two answers per pair, 60% positives: the grid's
c80 cell) and `strong` (careful 0.86-0.94, 0.25 worse on hard negatives, three answers per pair, 40% positives).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotator.analysis.posterior import PosteriorPrior, fit_posterior, oracle_probability, reliability  # noqa: E402

PAIRS = 360
WORKERS = 20
CROWDS = {
    "weak": {"accuracy": (0.75, 0.85), "hard_error": 0.10, "per_pair": 2, "positives": 0.6},
    "strong": {"accuracy": (0.86, 0.94), "hard_error": 0.25, "per_pair": 3, "positives": 0.4},
}


def crowd(seed: int, *, accuracy, hard_error, per_pair, positives):
    rng = np.random.default_rng(seed)
    truth = rng.random(PAIRS) < positives
    hard = np.arange(PAIRS) % 3 == 0
    skill = {worker: rng.uniform(*accuracy) for worker in range(WORKERS)}
    rows, sens, spec = [], {}, {}
    for pair in range(PAIRS):
        for worker in rng.choice(WORKERS, per_pair, replace=False):
            worker = int(worker)
            right = skill[worker] - (hard_error if hard[pair] and not truth[pair] else 0.0)
            rows.append((pair, worker, bool(truth[pair]) if rng.random() < right else not truth[pair]))
            sens[(worker, pair)] = skill[worker]
            spec[(worker, pair)] = skill[worker] - (hard_error if hard[pair] else 0.0)
    known = {10_000 + k: bool(k % 2) for k in range(40)}
    for gold, value in known.items():
        for worker in rng.choice(WORKERS, 2, replace=False):
            rows.append((gold, int(worker), value if rng.random() < skill[int(worker)] else not value))
    return truth, hard, rows, known, sens, spec


def measure(seed: int, settings: dict) -> dict[str, tuple[float, float, float, float]]:
    truth, hard, rows, known, sens, spec = crowd(seed, **settings)
    pair_ids, worker_ids, verdicts = zip(*rows, strict=True)
    candidates = [k for k, pair in enumerate(pair_ids) if pair < PAIRS]
    rate = float(truth.mean())
    oracle = oracle_probability(
        pair_ids=[pair_ids[k] for k in candidates],
        worker_ids=[(worker_ids[k], pair_ids[k]) for k in candidates],
        verdicts=[verdicts[k] for k in candidates],
        sensitivity=sens,
        specificity=spec,
        prior_log_odds=dict.fromkeys(range(PAIRS), float(np.log(rate / (1 - rate)))),
    )
    prior = PosteriorPrior(worker_accuracy=0.85, hierarchical=True)
    classes = {pair: 2 for pair in range(PAIRS) if hard[pair]}
    out = {}
    for name, difficulty in (("flat", None), ("rank classes", classes)):
        fit = fit_posterior(
            pair_ids=pair_ids, worker_ids=worker_ids, verdicts=verdicts, known=known, prior=prior, difficulty=difficulty
        )
        row_of = fit.row_of()
        low, high = fit.interval()
        rows_ = np.array([row_of[pair] for pair in range(PAIRS)])
        probability = fit.probability[rows_]
        held = np.array([low[row_of[pair]] <= oracle[pair] <= high[row_of[pair]] for pair in range(PAIRS)])
        out[name] = (
            float(np.mean((probability > 0.5) == truth)),
            float(np.mean((probability[hard] > 0.5) == truth[hard])),
            float(held.mean()),
            reliability(probability[hard], truth[hard])[1],
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    print("crowd   model         accuracy  hard pairs  90% intervals hold the oracle P  hard pairs' ECE")
    for crowd_name, settings in CROWDS.items():
        results = [measure(seed, settings) for seed in range(args.seeds)]
        for model in ("flat", "rank classes"):
            figures = np.array([result[model] for result in results])
            mean = figures.mean(0)
            coverage = ", ".join(f"{value:.2f}" for value in figures[:, 2])
            print(
                f"{crowd_name:7s} {model:13s} {mean[0]:.3f}     {mean[1]:.3f}       {mean[2]:.3f} ({coverage})"
                f"{'':4s}{mean[3]:.3f}"
            )


if __name__ == "__main__":
    main()
