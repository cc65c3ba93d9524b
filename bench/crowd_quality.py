"""Label quality of the product's policy variants on a realistic simulated crowd, over several seeds.

Every seed runs `annotator.scenarios.simulation.simulate_crowd` (the real services: claims, submits, gold scoring,
the crowd check before approval, review, aggregation, follow-up HITs) once per variant on the same
synthetic dataset and crowd make-up: 40 workers, 32 careful ones right 89% +- 5% of the time, 8 bad of
five kinds (random, always-yes, adversarial, colluder, gold learner), at most 3 HITs each, no
qualification test (so every bad worker works), candidates from two offline annotators, tfidf_pivot and
minilm_pivot (`--annotators`): the campaign pools both runs' top 5 and the machine prior reads both. That is
what `make demo` ranks with and what a requester who ranked a dataset with more than one annotator gets, so
it is the product's normal use; one weak run alone (tfidf_pivot) barely separates the candidates. Prints each variant's mean over
the seeds: label accuracy, human answers per candidate pair, the share of 90% intervals that hold the
oracle probability, the calibration error, and the share of bad and good workers' assignments flagged;
then PASS or FAIL for each goal of the "done when" list (the model-assisted variant is the product's
defaults).

It also prints an *oracle bound* per seed: the answers per pair a sequential test needs when it knows
each worker's true accuracy and has the best machine prior the campaign's machine evidence allows (a
logistic model of the machine features fitted on the truth itself), stopping at the campaign's settle
probability (default 0.95) or 5 answers, with the crowd's careful workers only (Monte Carlo, 400 runs per
pair). No real policy can do better on the same evidence, so it says whether a goal is reachable at all.

`--bad-kinds` sets the bad workers' kinds in turn and `--collusion position` makes the colluders answer from one
shared sheet by HIT position; the share of colluders' assignments flagged is printed on its own line.

    DATABASE_URL=postgres://... .venv/bin/python bench/crowd_quality.py --seeds 2 [--first-seed 1 --images 60]
    ... --bad-kinds colluder,random,always_yes,adversarial,gold_learner --collusion position  (two colluders)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")

ACCURACY_GOAL = 0.97
ANSWERS_SHARE_GOAL = 2 / 3  # of fixed redundancy 3's answers per pair
COVERAGE_GOAL = (0.85, 0.95)
GOOD_FLAGGED_GOAL = 0.05
BAD_CAUGHT_GOAL = 0.95


def oracle_bound(*, campaign_id: int, truth_of, settle: float, careful: tuple[float, float], runs: int = 400):
    """(answers per pair, accuracy) of the sequential test with the truth about workers and machine prior."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from annotator.models import Campaign, HitItem, ItemRole, Pair
    from annotator.selectors.posterior import machine_features

    campaign = Campaign.objects.get(pk=campaign_id)
    pair_ids = sorted(
        set(HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values_list("pair_id", flat=True))
    )
    pairs = Pair.objects.in_bulk(pair_ids)
    truth = np.array([truth_of(pairs[pk]) for pk in pair_ids], dtype=bool)
    features = machine_features(campaign=campaign, pair_ids=pair_ids)
    rate = min(max(truth.mean(), 1e-3), 1 - 1e-3)
    prior = np.full(len(pair_ids), np.log(rate / (1 - rate)))
    if features and 0 < truth.sum() < len(truth):
        width = len(next(iter(features.values())))
        x = np.array([features.get(pk, np.zeros(width)) for pk in pair_ids])
        prior = LogisticRegression(C=10.0).fit(x, truth).decision_function(x)
    rng = np.random.default_rng(0)
    bound = np.log(settle / (1 - settle))
    answers = np.zeros((runs, len(pair_ids)))
    log_odds = np.tile(prior, (runs, 1))
    active = np.ones_like(log_odds, dtype=bool)
    for _ in range(5):
        accuracy = rng.uniform(careful[0], careful[1], size=log_odds.shape)
        right = rng.random(log_odds.shape) < accuracy
        says_positive = np.where(right, truth[None, :], ~truth[None, :])
        weight = np.log(accuracy / (1 - accuracy))
        log_odds = np.where(active, log_odds + np.where(says_positive, weight, -weight), log_odds)
        answers += active
        active &= np.abs(log_odds) < bound
    correct = (log_odds > 0) == truth[None, :]
    return float(answers.mean()), float(correct.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--images", type=int, default=60)
    parser.add_argument("--workers", type=int, default=40)
    parser.add_argument("--variants", default="fixed,adaptive,assisted")
    parser.add_argument("--no-oracle", action="store_true", help="skip the oracle bound")
    parser.add_argument("--careful-accuracy", type=float, default=None, help="careful workers' accuracy at work")
    parser.add_argument(
        "--careful-test-accuracy",
        type=float,
        default=None,
        help="careful workers' accuracy on the qualification test (default: as at work)",
    )
    parser.add_argument(
        "--qualification-items", type=int, default=0, help="items of the qualification test (default 0: none)"
    )
    parser.add_argument(
        "--gold-light-share",
        type=float,
        default=None,
        help="adaptive gold: the campaign's share of gold-light HITs (default: the campaign default)",
    )
    parser.add_argument(
        "--annotators",
        default="tfidf_pivot,minilm_pivot",
        help="offline annotators whose runs the campaign pools (comma-separated; default both, as `make demo`)",
    )
    parser.add_argument("--bad-kinds", default=None, help="the bad workers' kinds, in turn (comma-separated)")
    parser.add_argument("--collusion", default="pair", choices=["pair", "position"], help="the colluders' sheet")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command

    from annotator.models import Campaign
    from annotator.scenarios.simulation import SimulationConfig, simulate_variants, truth_lookup
    from annotator.selectors.posterior import campaign_gold_check

    call_command("migrate", verbosity=0)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    totals: dict[str, dict[str, list]] = {v: {} for v in variants}
    oracle: list[tuple[float, float]] = []
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        config = SimulationConfig(
            images=args.images,
            workers=args.workers,
            seed=seed,
            qualification_items=args.qualification_items,
            ranking="auto",
            annotators=tuple(a.strip() for a in args.annotators.split(",") if a.strip()),
            gold_light_share=args.gold_light_share,
            collusion=args.collusion,
            **({"bad_kinds": tuple(k.strip() for k in args.bad_kinds.split(","))} if args.bad_kinds else {}),
            careful_test_accuracy=args.careful_test_accuracy,
            **({} if args.careful_accuracy is None else {"careful_accuracy": args.careful_accuracy}),
        )
        results = simulate_variants(config, variants)
        for result in results:
            m = result.metrics
            row = totals[m["variant"]]
            for key in ("label_accuracy", "answers_per_pair", "interval_coverage", "calibration_error"):
                row.setdefault(key, []).append(m[key])
            colluders = m["flagged_by_kind"].get("colluder", (0, 0))
            row.setdefault("colluder_flagged", []).append(colluders[0])
            row.setdefault("colluder_assignments", []).append(colluders[1])
            check = campaign_gold_check(campaign=Campaign.objects.get(pk=result.campaign_id))
            for key, value in (("gold_coverage", check.coverage), ("inflation", check.inflation)):
                row.setdefault(key, []).append(value)
            for key in (
                "bad_flagged_count",
                "bad_assignments",
                "good_flagged_count",
                "good_assignments",
                "careful_gold_share",
                "careful_gold_light_hits",
                "careful_hits",
            ):
                row.setdefault(key, []).append(m[key])
            print(
                f"seed {seed} {m['variant']:9s} accuracy {m['label_accuracy']:.3f} answers/pair "
                f"{m['answers_per_pair']:.2f} coverage {m['interval_coverage'] or 0:.3f} bad "
                f"{m['bad_flagged_count']}/{m['bad_assignments']} good {m['good_flagged_count']}/{m['good_assignments']}"
                f" careful gold share {m['careful_gold_share']:.3f} ({m['careful_gold_light_hits']}/{m['careful_hits']}"
                f" HITs light) gold check: coverage {check.coverage or 0:.3f} inflation {check.inflation:.2f}",
                flush=True,
            )
        assisted = [r for r in results if r.metrics["variant"] == "assisted"]
        if assisted and not args.no_oracle:
            campaign = Campaign.objects.get(pk=assisted[0].campaign_id)
            spread = config.careful_spread
            answers, accuracy = oracle_bound(
                campaign_id=campaign.pk,
                truth_of=truth_lookup(campaign),
                settle=campaign.settle_probability,
                careful=(config.careful_accuracy - spread, config.careful_accuracy + spread),
            )
            oracle.append((answers, accuracy))
            print(f"seed {seed} oracle    accuracy {accuracy:.3f} answers/pair {answers:.2f}", flush=True)
    print(f"\n{args.seeds} seeds, {args.images} images, {args.workers} workers, {time.perf_counter() - started:.0f} s")
    print(
        "variant    accuracy  answers/pair  interval cover  ECE    bad flagged           good flagged"
        "          careful gold share (light HITs)"
    )
    summary = {}
    for variant, row in totals.items():

        def mean(key, row=row):
            values = [v for v in row[key] if v is not None]
            return sum(values) / len(values) if values else float("nan")

        bad, bad_n = sum(row["bad_flagged_count"]), sum(row["bad_assignments"])
        good, good_n = sum(row["good_flagged_count"]), sum(row["good_assignments"])
        summary[variant] = {
            "accuracy": mean("label_accuracy"),
            "answers": mean("answers_per_pair"),
            "coverage": mean("interval_coverage"),
            "bad": bad / max(bad_n, 1),
            "good": good / max(good_n, 1),
        }
        print(
            f"{variant:10s} {mean('label_accuracy'):.3f}     {mean('answers_per_pair'):.2f}          "
            f"{mean('interval_coverage'):.3f}           {mean('calibration_error'):.3f}  "
            f"{bad / max(bad_n, 1):.3f} ({bad}/{bad_n})   {good / max(good_n, 1):.3f} ({good}/{good_n})"
            f"   {mean('careful_gold_share'):.3f} ({sum(row['careful_gold_light_hits'])}/{sum(row['careful_hits'])})"
            f"   gold check coverage {mean('gold_coverage'):.3f}, inflation {mean('inflation'):.2f}"
        )
    for variant, row in totals.items():
        caught, n = sum(row["colluder_flagged"]), sum(row["colluder_assignments"])
        print(f"{variant:10s} colluders' assignments flagged {caught / max(n, 1):.3f} ({caught}/{n})")
    if oracle:
        print(
            f"oracle     {sum(a for _, a in oracle) / len(oracle):.3f}     {sum(n for n, _ in oracle) / len(oracle):.2f}"
            "          (true worker accuracies, machine prior fitted on the truth; careful workers only)"
        )
    print()
    for variant, s in summary.items():
        goals = [
            (f"accuracy >= {ACCURACY_GOAL}", s["accuracy"] >= ACCURACY_GOAL),
            (f"good workers flagged <= {GOOD_FLAGGED_GOAL:.0%}", s["good"] <= GOOD_FLAGGED_GOAL),
            (f"bad work caught >= {BAD_CAUGHT_GOAL:.0%}", s["bad"] >= BAD_CAUGHT_GOAL),
        ]
        if variant != "fixed":
            goals.append(
                (
                    f"90% intervals cover {COVERAGE_GOAL[0]}-{COVERAGE_GOAL[1]}",
                    COVERAGE_GOAL[0] <= s["coverage"] <= COVERAGE_GOAL[1],
                )
            )
            if "fixed" in summary:
                limit = summary["fixed"]["answers"] * ANSWERS_SHARE_GOAL
                goals.append(
                    (f"answers/pair <= 2/3 of fixed ({limit:.2f})", s["answers"] <= limit),
                )
        for name, ok in goals:
            print(f"{'PASS' if ok else 'FAIL'}  {variant:9s} {name}")


if __name__ == "__main__":
    main()
