"""Label quality of the product's policy variants on a realistic simulated crowd, over several seeds.

Every seed runs `annotator.scenarios.simulation.simulate_crowd` (the real services: claims, submits, gold scoring,
the crowd check before approval, review, aggregation, follow-up HITs) once per variant on the same
synthetic dataset and crowd make-up: 40 workers, 32 careful ones right 89% +- 5% of the time, 8 bad of
five kinds (random, always-yes, adversarial, colluder, gold learner), at most 3 HITs each, no
qualification test (so every bad worker works), tfidf_pivot candidates. Prints each variant's mean over
the seeds: label accuracy, human answers per candidate pair, the share of 90% intervals that hold the
oracle probability, the calibration error, and the share of bad and good workers' assignments flagged.

    DATABASE_URL=postgres://... .venv/bin/python bench/crowd_quality.py --seeds 5 [--images 60]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--images", type=int, default=60)
    parser.add_argument("--workers", type=int, default=40)
    parser.add_argument("--variants", default="fixed,adaptive,assisted")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command

    from annotator.scenarios.simulation import SimulationConfig, simulate_variants

    call_command("migrate", verbosity=0)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    totals: dict[str, dict[str, list]] = {v: {} for v in variants}
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        config = SimulationConfig(
            images=args.images, workers=args.workers, seed=seed, qualification_items=0, ranking="auto"
        )
        for result in simulate_variants(config, variants):
            m = result.metrics
            row = totals[m["variant"]]
            for key in ("label_accuracy", "answers_per_pair", "interval_coverage", "calibration_error"):
                row.setdefault(key, []).append(m[key])
            for key in ("bad_flagged_count", "bad_assignments", "good_flagged_count", "good_assignments"):
                row.setdefault(key, []).append(m[key])
            print(
                f"seed {seed} {m['variant']:9s} accuracy {m['label_accuracy']:.3f} answers/pair "
                f"{m['answers_per_pair']:.2f} coverage {m['interval_coverage'] or 0:.3f} bad "
                f"{m['bad_flagged_count']}/{m['bad_assignments']} good {m['good_flagged_count']}/{m['good_assignments']}",
                flush=True,
            )
    print(f"\n{args.seeds} seeds, {args.images} images, {args.workers} workers, {time.perf_counter() - started:.0f} s")
    print("variant    accuracy  answers/pair  interval cover  ECE    bad flagged           good flagged")
    for variant, row in totals.items():

        def mean(key, row=row):
            values = [v for v in row[key] if v is not None]
            return sum(values) / len(values) if values else float("nan")

        bad, bad_n = sum(row["bad_flagged_count"]), sum(row["bad_assignments"])
        good, good_n = sum(row["good_flagged_count"]), sum(row["good_assignments"])
        print(
            f"{variant:10s} {mean('label_accuracy'):.3f}     {mean('answers_per_pair'):.2f}          "
            f"{mean('interval_coverage'):.3f}           {mean('calibration_error'):.3f}  "
            f"{bad / max(bad_n, 1):.3f} ({bad}/{bad_n})   {good / max(good_n, 1):.3f} ({good}/{good_n})"
        )


if __name__ == "__main__":
    main()
