"""Benchmark: Crisscrossed Captions' Table 5 and the self-match rule on the released CxC test files.

1. Table 5 (annotator.analysis.cxc_table5): the bootstrap Spearman's r (x100) of known scorers against the
   released STS, SIS and SITS ratings: the ratings themselves (must be 100), reversed (-100), constant (no r),
   the ratings plus Gaussian noise (sd 1 and 2), and random scores; with the spread (sd of the samples) and
   the seconds per task.
2. The self-match rule (annotator.analysis.self_matches): on STS and SIS, a model that ranks each query's
   rated items by its noisy score (sd 1) and 20 random others of the gallery, scored with ECCV Caption's
   R@1/R@5 (annotator.analysis.metrics) as is, with the query put first, and with the query put first and
   dropped. The first and the last must be equal.

Pure Python over the files; no database.

    .venv/bin/python bench/cxc_table5.py                                  # fixtures/cxc, 1,000 samples
    .venv/bin/python bench/cxc_table5.py --dir ../shared/data/cxc --samples 200
"""

import argparse
import gzip
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FILES = {"sts": "sts_test.csv", "sis": "sis_test.csv", "sits": "sits_test.csv"}
THRESHOLD = {"sts": 3.0, "sis": 2.5}


def _text(directory: Path, name: str) -> str:
    plain = directory / name
    if plain.exists():
        return plain.read_text()
    return gzip.decompress((directory / f"{name}.gz").read_bytes()).decode()


SCORERS = {
    "ratings": lambda human, rng: human,
    "reversed": lambda human, rng: -human,
    "constant": lambda human, rng: 1.0,
    "noise sd 1": lambda human, rng: human + rng.gauss(0, 1.0),
    "noise sd 2": lambda human, rng: human + rng.gauss(0, 2.0),
    "random": lambda human, rng: rng.random(),
}


def table5_rows(ratings: dict, samples: int, seed: int) -> None:
    from annotator.analysis.cxc_table5 import table5

    print(f"Table 5: bootstrap Spearman's r x100 (sd x100), {samples} samples, seed {seed}")
    print(f"{'scorer':<12}" + "".join(f"{task.upper():>22}" for task in FILES))
    for name, scorer in SCORERS.items():
        rng = random.Random(1)
        scores = {task: {(a, b): scorer(human, rng) for a, b, human in rows} for task, rows in ratings.items()}
        cells = []
        for task in FILES:
            started = time.perf_counter()
            entry = table5({task: ratings[task]}, {task: scores[task]}, samples=samples, seed=seed)["tasks"][task]
            seconds = time.perf_counter() - started
            value = "no r" if entry["spearman"] is None else f"{entry['spearman_x100']:.1f} ({entry['sd'] * 100:.1f})"
            cells.append(f"{value} {seconds:.1f}s")
        print(f"{name:<12}" + "".join(f"{cell:>22}" for cell in cells))


def self_match_rows(ratings: dict) -> None:
    from annotator.analysis.metrics import evaluate_direction
    from annotator.analysis.self_matches import self_matches_drop

    print("\nSelf-match rule: R@1 / R@5 of one noisy model (sd 1) over the rated items + 20 random others")
    for task, direction in (("sts", "t2t"), ("sis", "i2i")):
        rng = random.Random(2)
        rated: dict[str, dict[str, float]] = {}
        positives: dict[str, set] = {}
        for a, b, human in ratings[task]:
            for query, target in ((a, b), (b, a)):  # a rated pair answers for both of its items
                rated.setdefault(query, {})[target] = human
                if human >= THRESHOLD[task]:
                    positives.setdefault(query, set()).add(target)
        gallery = sorted(rated)
        rankings = {}
        for query, items in rated.items():
            others = [item for item in rng.sample(gallery, 21) if item != query and item not in items][:20]
            scored = [(human + rng.gauss(0, 1.0), item) for item, human in items.items()]
            scored += [(rng.uniform(0, 2), item) for item in others]
            rankings[query] = [item for _, item in sorted(scored, reverse=True)]
        labels = {query: sorted(found) for query, found in positives.items()}
        query_first = {query: [query, *ranked] for query, ranked in rankings.items()}
        cleaned, dropped = self_matches_drop({direction: query_first})
        for what, ranked in (
            ("as ranked", rankings),
            ("query first", query_first),
            ("query first, dropped", cleaned[direction]),
        ):
            means, counts = evaluate_direction(ranked, labels, metrics=("r1", "r5"))
            print(
                f"  {task.upper()} {what:<22} R@1 {means['r1']:.3f}  R@5 {means['r5']:.3f}  ({counts['queries']} queries)"
            )
        print(f"  {task.upper()} dropped from {dropped[direction]:,} rankings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=str(Path(__file__).resolve().parent.parent / "fixtures" / "cxc"))
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from annotator.analysis.cxc_table5 import ratings_csv_read

    ratings = {}
    for task, name in FILES.items():
        read_task, rows = ratings_csv_read(_text(Path(args.dir), name))
        assert read_task == task
        ratings[task] = rows
    print("pairs: " + ", ".join(f"{task.upper()} {len(rows):,}" for task, rows in ratings.items()))
    table5_rows(ratings, args.samples, args.seed)
    self_match_rows(ratings)


if __name__ == "__main__":
    main()
