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

`--bad-kinds` sets the bad workers' kinds in turn (colluders answer from one shared sheet by HIT position); the
share of colluders' assignments flagged is printed on its own line, and so is the posterior's check on gold
(`campaign_gold_check`: coverage of the gold pairs scored as unknown, and the widening in force).

    DATABASE_URL=postgres://... .venv/bin/python bench/crowd_quality.py --seeds 2 [--first-seed 1 --images 60]

`--grid` runs a grid of crowds instead, at the product's defaults (the `defaults` variant, the campaign's own
qualification test): careful workers' accuracy at work 0.80 / 0.85 / 0.90 / 0.95 (`--accuracies`) times a bad
share of 10% / 20% / 30% (`--bad-shares`) whose kinds come in turn from GRID_BAD_KINDS (colluders answering
from one shared sheet by HIT position, random, always-yes, always-no, too fast, adversarial, gold learners).
Every cell's careful workers are near-flawless on the qualification test (`--test-accuracy`, 0.98) but not at
work, so are its bad workers (they try on the test and spam, collude or guess only at work; `--bad-fail-test`
makes them answer the test as they work, and most then fail it), give one answer in six as a middle answer (`--middle-share`), and err more on negatives the annotators
ranked first (`--rank-difficulty`); the crowd is sized so the campaign can finish (3 HITs per worker). The
dataset and its ranking runs are made once per seed and shared by every cell. Every goal is reported per
cell, and the worst cell is what counts:

    DATABASE_URL=postgres://... .venv/bin/python bench/crowd_quality.py --grid --seeds 10 --first-seed 1
    ... --grid --quick --cells c85-b20,c90-b30      # a subset, 24 images, one seed
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
ACCURACY_GOAL_FROM = 0.85  # the accuracy goal holds where careful workers are at least this accurate
ANSWERS_GOAL_FROM = 0.90  # answers <= 2/3 of fixed redundancy 3 where careful workers are at least this
FIXED_REDUNDANCY = 3
GRID_ACCURACIES = (0.80, 0.85, 0.90, 0.95)
GRID_BAD_SHARES = (0.10, 0.20, 0.30)


def oracle_bound(*, campaign_id: int, truth_of, settle: float, careful: tuple[float, float], runs: int = 400):
    """(answers per pair, accuracy) of the sequential test with the truth about workers and machine prior."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from annotator.models import Campaign, HitItem, ItemRole, Pair
    from annotator.quality.selectors.posterior import machine_features

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


def cell_name(accuracy: float, bad_share: float) -> str:
    return f"c{round(accuracy * 100)}-b{round(bad_share * 100)}"


def _mean(values) -> float:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else float("nan")


def grid_goals(cells: dict[str, dict]) -> list[tuple[str, str, bool | None, str]]:
    """(goal, cell, passed or None where the goal does not apply, the figure) for every goal and cell."""
    rows = []
    by_share: dict[float, list[tuple[float, str]]] = {}
    for name, cell in cells.items():
        by_share.setdefault(cell["bad_share"], []).append((cell["careful_accuracy"], name))
    for name, cell in cells.items():
        accuracy, careful = cell["accuracy"], cell["careful_accuracy"]
        rows.append(("every pair labelled", name, cell["unfinished"] == 0, f"{cell['unfinished']} unfinished"))
        rows.append(
            (
                f"accuracy >= {ACCURACY_GOAL} where careful >= {ACCURACY_GOAL_FROM}",
                name,
                accuracy >= ACCURACY_GOAL if careful >= ACCURACY_GOAL_FROM - 1e-9 else None,
                f"{accuracy:.3f}",
            )
        )
        rows.append((f"bad work caught >= {BAD_CAUGHT_GOAL}", name, cell["bad"] >= BAD_CAUGHT_GOAL, cell["bad_text"]))
        rows.append(
            (f"good work flagged <= {GOOD_FLAGGED_GOAL}", name, cell["good"] <= GOOD_FLAGGED_GOAL, cell["good_text"])
        )
        coverage = cell["coverage"]
        rows.append(
            (
                f"90% intervals hold the oracle P {COVERAGE_GOAL[0]}-{COVERAGE_GOAL[1]}",
                name,
                COVERAGE_GOAL[0] <= coverage <= COVERAGE_GOAL[1],
                f"{coverage:.3f}",
            )
        )
        limit = FIXED_REDUNDANCY * ANSWERS_SHARE_GOAL
        rows.append(
            (
                f"answers/pair <= {limit:.2f} (2/3 of fixed {FIXED_REDUNDANCY}) where careful >= {ANSWERS_GOAL_FROM}",
                name,
                cell["answers"] <= limit if careful >= ANSWERS_GOAL_FROM - 1e-9 else None,
                f"{cell['answers']:.2f}",
            )
        )
        stronger = sorted(a for a, _ in by_share[cell["bad_share"]] if a > careful)
        if stronger:
            neighbour = next(n for a, n in by_share[cell["bad_share"]] if a == stronger[0])
            rows.append(
                (
                    "answers/pair rise as careful accuracy falls",
                    name,
                    cell["answers"] > cells[neighbour]["answers"],
                    f"{cell['answers']:.2f} vs {cells[neighbour]['answers']:.2f} in {neighbour}",
                )
            )
    return rows


def worst_cell_verdicts(rows) -> list[tuple[str, list[str]]]:
    """(goal, the cells that fail it with their figure) per goal: a goal passes only in every cell it applies to."""
    verdicts = []
    for goal in dict.fromkeys(goal for goal, *_ in rows):
        failed = [f"{name} ({figure})" for g, name, passed, figure in rows if g == goal and passed is False]
        verdicts.append((goal, failed))
    return verdicts


def run_grid(args) -> None:
    from dataclasses import replace

    from annotator.scenarios.simulation import GRID_BAD_KINDS, SimulationConfig, simulate_crowd, simulation_prepare

    accuracies = [float(a) for a in args.accuracies.split(",") if a.strip()]
    shares = [float(b) for b in args.bad_shares.split(",") if b.strip()]
    grid = {cell_name(a, b): (a, b) for a in accuracies for b in shares}
    wanted = [c.strip() for c in (args.cells or "").split(",") if c.strip()]
    unknown = [c for c in wanted if c not in grid]
    if unknown:
        raise SystemExit(f"Unknown cells {', '.join(unknown)}; the grid has {', '.join(grid)}.")
    if wanted:
        grid = {name: grid[name] for name in wanted}
    runs: dict[str, list[dict]] = {name: [] for name in grid}
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        base = SimulationConfig(
            images=args.images,
            seed=seed,
            workers=args.workers or None,
            variant="defaults",
            bad_kinds=GRID_BAD_KINDS,
            test_accuracy=args.test_accuracy,
            bad_pass_test=not args.bad_fail_test,
            middle_share=args.middle_share,
            rank_difficulty=args.rank_difficulty,
            hits_per_worker=args.hits_per_worker or None,
            qualification_items=None,  # the campaign's own test
            gold_light_share=args.gold_light_share,
            annotators=tuple(a.strip() for a in args.annotators.split(",") if a.strip()),
        )
        prepared = simulation_prepare(base)  # one dataset and ranking per seed, for every cell
        for name, (accuracy, share) in grid.items():
            result = simulate_crowd(replace(base, careful_accuracy=accuracy, bad_share=share), prepared=prepared)
            m = result.metrics
            runs[name].append(m)
            print(
                f"seed {seed} {name}: accuracy {m['label_accuracy']:.3f} answers/pair {m['answers_per_pair']:.2f} "
                f"coverage {m['interval_coverage'] or 0:.3f} ECE {m['calibration_error']:.3f} bad "
                f"{m['bad_flagged_count']}/{m['bad_assignments']} good {m['good_flagged_count']}/"
                f"{m['good_assignments']} unfinished {m['unfinished_pairs']}/{m['candidate_pairs']} "
                f"({m['seconds']:.0f} s); good work's flags {m['good_flags'] or 'none'}",
                flush=True,
            )
    cells = {}
    for name, rows in runs.items():
        accuracy, share = grid[name]
        bad, bad_n = sum(m["bad_flagged_count"] for m in rows), sum(m["bad_assignments"] for m in rows)
        good, good_n = sum(m["good_flagged_count"] for m in rows), sum(m["good_assignments"] for m in rows)
        cells[name] = {
            "careful_accuracy": accuracy,
            "bad_share": share,
            "accuracy": _mean(m["label_accuracy"] for m in rows),
            "answers": _mean(m["answers_per_pair"] for m in rows),
            "coverage": _mean(m["interval_coverage"] for m in rows),
            "ece": _mean(m["calibration_error"] for m in rows),
            "bad": bad / bad_n if bad_n else 1.0,
            "bad_text": f"{bad / bad_n:.3f} ({bad}/{bad_n})" if bad_n else "none got through the test (0/0)",
            "good": good / good_n if good_n else 0.0,
            "good_text": f"{good / max(good_n, 1):.3f} ({good}/{good_n})",
            "unfinished": sum(m["unfinished_pairs"] for m in rows),
            "kept_out": f"{sum(m['bad_workers_kept_out'] for m in rows)}/{sum(m['bad_workers'] for m in rows)}",
        }
    print(
        f"\ngrid: {len(grid)} cells x {args.seeds} seeds (first {args.first_seed}), {args.images} images, "
        f"test accuracy {args.test_accuracy:g} (bad workers {'fail' if args.bad_fail_test else 'pass'} it), middle share {args.middle_share:.3f}, rank difficulty "
        f"{args.rank_difficulty:g}; {time.perf_counter() - started:.0f} s"
    )
    print("cell      accuracy  answers/pair  interval cover  ECE    bad caught           good flagged       unfinished")
    for name, c in cells.items():
        print(
            f"{name:9s} {c['accuracy']:.3f}     {c['answers']:.2f}          {c['coverage']:.3f}           "
            f"{c['ece']:.3f}  {c['bad_text']:20s} {c['good_text']:18s} {c['unfinished']}"
            f"  (bad kept out by the test {c['kept_out']})"
        )
    print()
    rows = grid_goals(cells)
    for goal, name, passed, figure in rows:
        verdict = "n/a " if passed is None else ("PASS" if passed else "FAIL")
        print(f"{verdict}  {name:9s} {goal}: {figure}")
    print("\nthe worst cell counts:")
    verdicts = worst_cell_verdicts(rows)
    overall = not any(failed for _, failed in verdicts)
    for goal, failed in verdicts:
        print(f"{'FAIL' if failed else 'PASS'}  {goal}" + (f": fails in {', '.join(failed)}" if failed else ""))
    print(
        f"\n{'PASS' if overall else 'FAIL'}  overall ({len(cells)} cells, seeds {args.first_seed}-"
        f"{args.first_seed + args.seeds - 1})"
    )


def print_goals(summary: dict[str, dict]) -> None:
    """PASS or FAIL per variant and goal of the "done when" list (fixed redundancy is the answers' yardstick)."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="default 5 (1 with --quick)")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--images", type=int, default=None, help="default 60 (40 with --grid, 24 with --quick)")
    parser.add_argument(
        "--workers", type=int, default=None, help="default 40; 0: enough for the campaign to finish (--grid's default)"
    )
    parser.add_argument("--variants", default="fixed,adaptive,assisted")
    parser.add_argument("--grid", action="store_true", help="run the grid of crowds (see the module docstring)")
    parser.add_argument("--cells", default="", help="--grid: only these cells, e.g. c85-b20,c90-b30")
    parser.add_argument("--quick", action="store_true", help="24 images and one seed unless given")
    parser.add_argument("--accuracies", default=",".join(f"{a:g}" for a in GRID_ACCURACIES))
    parser.add_argument("--bad-shares", default=",".join(f"{b:g}" for b in GRID_BAD_SHARES))
    parser.add_argument("--careful-accuracy", type=float, default=0.89, help="not --grid: careful workers at work")
    parser.add_argument("--bad-share", type=float, default=0.2, help="not --grid")
    parser.add_argument(
        "--test-accuracy", type=float, default=None, help="careful workers on the test (--grid: 0.98; else as at work)"
    )
    parser.add_argument("--middle-share", type=float, default=None, help="default 0.25 (--grid: 1/6)")
    parser.add_argument("--rank-difficulty", type=float, default=None, help="default 0 (--grid: 0.10)")
    parser.add_argument("--hits-per-worker", type=int, default=3, help="0: no cap")
    parser.add_argument("--no-oracle", action="store_true", help="skip the oracle bound")
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
    parser.add_argument(
        "--judge-accuracy",
        type=float,
        default=None,
        help="not --grid: a synthetic vision-language judge of this accuracy joins every campaign's runs "
        "(the machine prior reads it; annotator/scenarios/judge_sim.py)",
    )
    parser.add_argument("--bad-kinds", default=None, help="the bad workers' kinds, in turn (comma-separated)")
    parser.add_argument(
        "--bad-fail-test",
        action="store_true",
        help="--grid: bad workers answer the qualification test as they work (most fail it); by default they pass it "
        "as careful workers do and only then spam, collude or guess",
    )
    args = parser.parse_args()
    args.seeds = args.seeds or (1 if args.quick else 5)
    args.images = args.images or (24 if args.quick else 40 if args.grid else 60)
    args.workers = (0 if args.grid else 40) if args.workers is None else args.workers
    if args.grid:
        args.test_accuracy = 0.98 if args.test_accuracy is None else args.test_accuracy
        args.middle_share = 1 / 6 if args.middle_share is None else args.middle_share
        args.rank_difficulty = 0.10 if args.rank_difficulty is None else args.rank_difficulty
    else:
        args.middle_share = 0.25 if args.middle_share is None else args.middle_share
        args.rank_difficulty = 0.0 if args.rank_difficulty is None else args.rank_difficulty

    import django

    django.setup()
    from django.core.management import call_command

    from annotator.quality.selectors.posterior import campaign_gold_check
    from annotator.scenarios.simulation import SimulationConfig, simulate_variants, truth_lookup

    call_command("migrate", verbosity=0)
    if args.grid:
        run_grid(args)
        return
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    totals: dict[str, dict[str, list]] = {v: {} for v in variants}
    oracle: list[tuple[float, float]] = []
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        config = SimulationConfig(
            images=args.images,
            workers=args.workers or None,
            seed=seed,
            bad_share=args.bad_share,
            test_accuracy=args.test_accuracy,
            middle_share=args.middle_share,
            rank_difficulty=args.rank_difficulty,
            hits_per_worker=args.hits_per_worker or None,
            qualification_items=args.qualification_items,
            ranking="auto",
            annotators=tuple(a.strip() for a in args.annotators.split(",") if a.strip()),
            gold_light_share=args.gold_light_share,
            **({"bad_kinds": tuple(k.strip() for k in args.bad_kinds.split(","))} if args.bad_kinds else {}),
            careful_accuracy=args.careful_accuracy,
            judge_accuracy=args.judge_accuracy,
        )
        spread = config.careful_spread

        def inspect(campaign, config=config, spread=spread):
            """Read before the rehearsal is deleted: the posterior's check on gold, and the oracle bound on the
            model-assisted campaign."""
            check = campaign_gold_check(campaign=campaign)
            oracle = None
            if not args.no_oracle and campaign.machine_prior and campaign.adaptive_redundancy:
                oracle = oracle_bound(
                    campaign_id=campaign.pk,
                    truth_of=truth_lookup(campaign),
                    settle=campaign.settle_probability,
                    careful=(config.careful_accuracy - spread, config.careful_accuracy + spread),
                )
            return {"gold_check": (check.coverage, check.inflation), "oracle": oracle}

        results = simulate_variants(config, variants, inspect=inspect)
        for result in results:
            m = result.metrics
            row = totals[m["variant"]]
            for key in ("label_accuracy", "answers_per_pair", "interval_coverage", "calibration_error"):
                row.setdefault(key, []).append(m[key])
            colluders = m["flagged_by_kind"].get("colluder", (0, 0))
            row.setdefault("colluder_flagged", []).append(colluders[0])
            row.setdefault("colluder_assignments", []).append(colluders[1])
            for key, value in zip(("gold_coverage", "inflation"), result.inspected["gold_check"], strict=True):
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
                f" HITs light) unfinished {m['unfinished_pairs']}/{m['candidate_pairs']}",
                flush=True,
            )
        assisted = [r for r in results if r.metrics["variant"] == "assisted" and r.inspected["oracle"] is not None]
        if assisted:
            answers, accuracy = assisted[0].inspected["oracle"]
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
    print_goals(summary)


if __name__ == "__main__":
    main()
