"""Benchmark: hit rate of the machine annotators on the synthetic dataset, whose truth is exact.

For each annotator (minilm_pivot, tfidf_pivot, and the visual one, which ranks images only) and direction,
the share of queries with a true match in the top 1, 5 and 10, next to a random ranking's. The truth is
truth.json of `make_synthetic_dataset`: every caption-image pair that is truly described, not only the
original pairs; two images are related when one caption describes both (they share all of its facts), two
captions when they describe a common image; plus their diversity (ECCV Table A.1: Kendall's tau-b of the
top-25 lists, average rank of one's top-1 in the other's list). CLIP is not measured: no CLIP weights can be
had here (a real checkpoint directory works the same way: `--clip DIR`).

It creates and drops its own database `bench_ranking_hit_rate` (PostgreSQL from DATABASE_URL, default the
local server), draws the scenes into a temporary directory and imports them like a requester would.

    .venv/bin/python bench/ranking_hit_rate.py --images 1000 --seed 0
Results are also written to bench/out/ranking_hit_rate.json.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
os.environ.setdefault("MEDIA_ROOT", tempfile.mkdtemp(prefix="bench-hit-rate-media-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402


def main(args) -> dict:
    from annotator.analysis.hit_rate import hit_rates, intra_modal_truth
    from annotator.datasets.services.imports import dataset_import
    from annotator.models import Caption, Image, RankingRun, RunStatus
    from annotator.ranking.selectors.ranking import annotator_diversity, top_lists
    from annotator.ranking.services.annotators import annotator_register
    from annotator.scenarios.synthetic import make_synthetic_dataset
    from workers.ranking.pipeline import ranking_run_execute

    out_dir = Path(tempfile.mkdtemp(prefix="bench-synthetic-"))
    start = time.perf_counter()
    make_synthetic_dataset(out_dir=out_dir, images=args.images, seed=args.seed)
    dataset = dataset_import(
        name=f"synthetic-{args.images}-{args.seed}",
        captions_path=out_dir / "captions.json",
        images_path=out_dir / "images",
    )
    print(
        f"synthetic dataset: {args.images} images, {dataset.captions.count()} captions, seed {args.seed} "
        f"(drawn and imported in {time.perf_counter() - start:.0f} s); database {connection.vendor}"
    )
    truth = json.loads((out_dir / "truth.json").read_text())
    images = dict(Image.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    captions = dict(Caption.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    truths = {
        "t2i": {captions[c]: {images[str(i)] for i in ids} for c, ids in truth["t2i"].items()},
        "i2t": {images[i]: {captions[str(c)] for c in ids} for i, ids in truth["i2t"].items()},
    }
    truths.update(intra_modal_truth(t2i=truths["t2i"], i2t=truths["i2t"]))
    annotators = [
        ("minilm_pivot", "minilm_pivot", ""),
        ("tfidf_pivot", "tfidf_pivot", ""),
        ("visual", "visual", ""),
    ]
    if args.clip:
        annotators.append(("clip", "clip", args.clip))
    results = {"images": args.images, "seed": args.seed, "annotators": {}}
    print(f"{'annotator':<14} {'direction':<9} {'queries':>7} {'top1':>6} {'top5':>6} {'top10':>6} {'seconds':>8}")
    for name, kind, checkpoint in annotators:
        annotator = annotator_register(name=name, kind=kind, checkpoint_path=checkpoint)
        run = RankingRun.objects.create(dataset=dataset, annotator=annotator, top_k=25, status=RunStatus.QUEUED)
        began = time.perf_counter()
        status = ranking_run_execute(run.pk)
        seconds = time.perf_counter() - began
        run.refresh_from_db()
        if status != RunStatus.SUCCEEDED:
            print(f"{name}: {status} {run.error}")
            continue
        results["annotators"][name] = {"seconds": seconds, "device": run.device}
        for direction in ("i2t", "t2i", "t2t", "i2i"):
            ranked = top_lists(run=run, direction=direction)
            if not ranked:  # the visual annotator ranks images against images only
                continue
            rates = hit_rates(ranked=ranked, truth=truths[direction], ks=(1, 5, 10))
            results["annotators"][name][direction] = rates
            print(
                f"{name:<14} {direction:<9} {rates['queries']:>7} {rates['top1']:>6.3f} {rates['top5']:>6.3f} {rates['top10']:>6.3f} {seconds:>8.1f}"
            )
    rng = random.Random(args.seed)
    spaces = {"i2t": list(captions.values()), "t2i": list(images.values())}
    spaces.update(t2t=spaces["i2t"], i2i=spaces["t2i"])
    results["random"] = {}
    for direction in ("i2t", "t2i", "t2t", "i2i"):
        targets = spaces[direction]
        ranked = {
            query: [t for t in rng.sample(targets, min(len(targets), 11)) if t != query][:10]
            for query in truths[direction]
        }
        rates = hit_rates(ranked=ranked, truth=truths[direction], ks=(1, 5, 10))
        results["random"][direction] = rates
        print(
            f"{'random':<14} {direction:<9} {rates['queries']:>7} {rates['top1']:>6.3f} {rates['top5']:>6.3f} {rates['top10']:>6.3f} {0:>8.1f}"
        )
    visual, chance = results["annotators"].get("visual", {}).get("i2i"), results["random"]["i2i"]
    if visual:
        print(
            f"visual i2i top5 {visual['top5']:.3f} vs random {chance['top5']:.3f}: "
            f"{visual['top5'] / max(chance['top5'], 1e-9):.1f}x"
        )
    for direction in ("t2i", "i2t", "i2i"):
        diversity = annotator_diversity(dataset=dataset, direction=direction, k=25, max_queries=args.diversity_queries)
        if diversity:
            results[f"diversity_{direction}"] = diversity
            names = diversity["annotators"]
            for i, row in enumerate(names):
                for j, column in enumerate(names):
                    if diversity["tau"][i][j] is None or diversity["avg_rank"][i][j] is None:
                        continue  # one of the two does not rank this direction
                    if i < j:
                        print(f"diversity {direction}: tau-b({row}, {column}) = {diversity['tau'][i][j]:.3f}")
                    if i != j:
                        print(
                            f"diversity {direction}: avg rank of {row}'s top-1 in {column}'s top 25 = {diversity['avg_rank'][i][j]:.2f} (found {diversity['found'][i][j]:.0%})"
                        )
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "ranking_hit_rate.json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clip", default="", help="a Hugging Face CLIP checkpoint directory to measure too")
    parser.add_argument("--diversity-queries", type=int, default=2000)
    args = parser.parse_args()
    test_name = os.environ.get("BENCH_DATABASE_NAME", "bench_ranking_hit_rate")
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = (
        test_name if connection.vendor == "postgresql" else None
    )
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        main(args)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
