"""Benchmark: Dawid-Skene (crowd-kit) over one million synthetic crowd answers: time and peak memory.

The crowd: `--workers` workers answer `--answers` four-choice judgements, `--redundancy` per pair (so
answers / redundancy pairs); 80% careful workers (error 5%), 10% random clickers, 10% always-yes, like
the simulated crowd of `manage.py simulate_crowd`. Truth: 40% of the pairs positive. The same code path
as `labels_aggregate` (annotator.analysis.aggregation.dawid_skene: the frame, crowd-kit, the label objects
and their 90% intervals; the answers are built as votes before the clock starts), in a
fresh child process per method so each peak RSS is its own; majority vote on the same answers is the
baseline. Prints seconds, peak resident memory (ru_maxrss of the child), EM iterations' outcome
(accuracy against the truth) and answers per second.

    .venv/bin/python bench/aggregate.py                     # 1,000,000 answers
    .venv/bin/python bench/aggregate.py --answers 100000    # a quick look
"""

import argparse
import json
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def make_answers(*, answers: int, workers: int, redundancy: int, seed: int):
    """A pandas frame task, worker, label and the truth per task (numpy, vectorised)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    tasks = answers // redundancy
    truth = rng.random(tasks) < 0.4
    kinds = rng.choice(3, size=workers, p=[0.8, 0.1, 0.1])  # 0 careful, 1 random, 2 always-yes
    task_ids = np.repeat(np.arange(tasks), redundancy)
    # Distinct workers per task: a random start and a stride through the worker list.
    start = rng.integers(0, workers, size=tasks)
    worker_ids = (np.repeat(start, redundancy) + np.tile(np.arange(redundancy) * 7919, tasks)) % workers
    kind = kinds[worker_ids]
    true = truth[task_ids]
    seen = np.where(rng.random(len(task_ids)) < 0.05, ~true, true)
    extreme = rng.random(len(task_ids)) < 0.75
    careful = np.where(seen, np.where(extreme, 0, 1), np.where(extreme, 3, 2))
    random_click = rng.integers(0, 4, size=len(task_ids))
    codes = np.where(kind == 0, careful, np.where(kind == 1, random_click, 0))
    labels = np.array(["yes", "partially_yes", "mostly_no", "no"])[codes]
    frame = pd.DataFrame({"task": task_ids, "worker": worker_ids, "label": labels})
    return frame, truth


def run(method: str, args, queue) -> None:
    from annotator.analysis.aggregation import Vote, dawid_skene, majority_vote

    frame, truth = make_answers(answers=args.answers, workers=args.workers, redundancy=args.redundancy, seed=args.seed)
    votes = [Vote(int(t), int(w), str(c)) for t, w, c in frame.itertuples(index=False, name=None)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    if method == "dawid_skene":
        labels = dawid_skene(votes, n_iter=args.iterations)
    else:
        labels = majority_vote(votes)
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    right = sum(1 for task, label in labels.items() if label.is_positive == bool(truth[task]))
    queue.put(
        {
            "method": method,
            "answers": len(frame),
            "pairs": len(labels),
            "seconds": round(seconds, 2),
            "answers_per_second": round(len(frame) / seconds),
            "peak_rss_mib": round(peak_kib / 1024, 1),
            "rss_before_mib": round(before / 1024, 1),
            "accuracy": round(right / len(truth), 4),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2_000)
    parser.add_argument("--redundancy", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object per method")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    context = multiprocessing.get_context("spawn")
    results = []
    for method in ("majority", "dawid_skene"):
        queue = context.Queue()
        child = context.Process(target=_child, args=(method, args, queue))
        child.start()
        result = queue.get()
        child.join()
        results.append(result)
        if args.json:
            print(json.dumps(result), flush=True)
    if not args.json:
        print(
            f"{'method':<12} {'answers':>9} {'pairs':>8} {'seconds':>8} {'answers/s':>10} {'peak MiB':>9} {'at start':>9} {'accuracy':>8}"
        )
        for r in results:
            print(
                f"{r['method']:<12} {r['answers']:>9} {r['pairs']:>8} {r['seconds']:>8} {r['answers_per_second']:>10} "
                f"{r['peak_rss_mib']:>9} {r['rss_before_mib']:>9} {r['accuracy']:>8}"
            )
        ds, mv = results[1], results[0]
        print(
            f"Dawid-Skene / majority: {ds['seconds'] / mv['seconds']:.1f}x the time, "
            f"{ds['peak_rss_mib'] / mv['peak_rss_mib']:.2f}x the peak memory"
        )


def _child(method, args, queue):
    import django

    django.setup()
    run(method, args, queue)


if __name__ == "__main__":
    main()
