"""Benchmark: gallery enlargement and coarse captions on synthetic scenes whose truth is exact.

A synthetic dataset (fine captions stating the whole scene, 15% planted coarse ones) and an outside pool
(half of it variants of target scenes, the rest random scenes, plus planted exact and near duplicates of
test images) are drawn, imported like a requester would, the pool scored with the `visual` annotator and
`keep` pool images proposed per target. Reported, each next to a random pick of the same size:
- precision: the share of proposed pool images that truly vary their target;
- recall: the share of the pool's variants proposed for the target they vary;
- duplicates: the planted ones caught, and any other pool image refused as one;
- coarse captions (a `tfidf_pivot` run over the gallery, the paper's rank-1 rule): precision and recall
  against the planted coarse captions;
- seconds for the pool import, the scoring and the ranking run.

It creates and drops its own database `bench_enlargement` (PostgreSQL from DATABASE_URL, default the
local server); images go to a temporary MEDIA_ROOT.

    .venv/bin/python bench/enlargement.py --images 300 --pool 600 --seed 0
Results are also written to bench/out/enlargement.json.
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
os.environ.setdefault("MEDIA_ROOT", tempfile.mkdtemp(prefix="bench-enlargement-media-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402


def main(args) -> dict:
    from annotator.datasets.services.imports import dataset_import
    from annotator.finegrained.selectors.coarse import coarse_captions
    from annotator.finegrained.services.pools.enlargement import (
        enlargement_add,
        enlargement_request,
    )
    from annotator.finegrained.services.pools.imports import pool_import
    from annotator.models import Caption, GalleryEnlargement, Image, PoolImage, RankingRun, RunStatus
    from annotator.ranking.services.annotators import annotator_register
    from annotator.scenarios.synthetic import generate, make_synthetic_dataset
    from annotator.scenarios.synthetic_pool import make_synthetic_pool
    from workers.ranking.pipeline import ranking_run_execute
    from workers.ranking.pool import enlargement_execute

    root = Path(tempfile.mkdtemp(prefix="bench-enlargement-"))
    options = {"images": args.images, "seed": args.seed, "coarse_share": 0.15, "fine": True}
    make_synthetic_dataset(out_dir=root / "dataset", **options)
    scenes, captions = generate(**options)
    dataset = dataset_import(
        name="enlargement", captions_path=root / "dataset" / "captions.json", images_path=root / "dataset" / "images"
    )
    truth = make_synthetic_pool(
        out_dir=root / "pool",
        dataset_dir=root / "dataset",
        scenes=scenes,
        captions=captions,
        pool_size=args.pool,
        seed=args.seed,
        exact_duplicates=args.duplicates,
        near_duplicates=args.duplicates,
    )
    results = {"images": args.images, "pool": args.pool, "seed": args.seed, "keep": args.keep}
    start = time.perf_counter()
    pool = pool_import(dataset=dataset, name="aux", images_path=root / "pool")
    results["import_seconds"] = round(time.perf_counter() - start, 1)
    planted = {**truth["duplicates"]["exact"], **truth["duplicates"]["near"]}
    reported = {d["file"].rsplit(".", 1)[0] for d in pool.report["duplicates"]}
    results["duplicates"] = {
        "planted": len(planted),
        "caught": len(reported & set(planted)),
        "other_pool_images_refused": len(reported - set(planted)),
        # What those others are in the truth: variants of a scene or random scenes whose picture is nearly
        # the same as a test image's (small objects on the same background).
        "others_by_kind": {
            kind: sum(1 for name in reported - set(planted) if truth["pool"].get(name, {}).get("change") == kind)
            for kind in ("same", "color", "count", "size", "random")
        },
    }

    start = time.perf_counter()
    enlargement = enlargement_request(pool=pool, image_annotator="visual", keep=args.keep, k_image=args.k)
    enlargement_execute(enlargement.pk)  # eager here; in production a gpu worker
    enlargement = GalleryEnlargement.objects.get(pk=enlargement.pk)
    results["scoring_seconds"] = round(time.perf_counter() - start, 1)
    image_source = dict(Image.objects.filter(dataset=dataset).values_list("pk", "source_id"))
    pool_source = dict(PoolImage.objects.filter(pool=pool).values_list("pk", "source_id"))
    related_to = {sid: info["related_to"] for sid, info in truth["pool"].items()}

    def quality(proposal: dict) -> tuple[float, float]:
        hits = total = 0
        for target, pool_ids in proposal.items():
            for pool_id in pool_ids:
                total += 1
                hits += related_to.get(pool_source[pool_id]) == int(image_source[int(target)])
        variants = sum(1 for value in related_to.values() if value is not None)
        return hits / max(total, 1), hits / max(variants, 1)

    chosen = {t: [item[0] for item in items] for t, items in enlargement.proposal["targets"].items()}
    rng = random.Random(args.seed)
    everything = list(pool_source)
    chance = {t: rng.sample(everything, len(ids)) for t, ids in chosen.items()}
    (precision, recall), (chance_precision, chance_recall) = quality(chosen), quality(chance)
    results["enlargement"] = {
        "counts": enlargement.proposal["counts"],
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "random_precision": round(chance_precision, 3),
        "random_recall": round(chance_recall, 3),
    }
    enlargement_add(enlargement=enlargement)

    start = time.perf_counter()
    run = RankingRun.objects.create(
        dataset=dataset, annotator=annotator_register(name="tfidf_pivot", kind="tfidf_pivot"), top_k=25
    )
    assert ranking_run_execute(run.pk) == RunStatus.SUCCEEDED
    results["ranking_seconds"] = round(time.perf_counter() - start, 1)
    caption_pk = dict(Caption.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    planted_coarse = {caption_pk[str(c.caption_id)] for c in captions if c.coarse}
    start = time.perf_counter()
    found = {c.caption_id for c in coarse_captions(dataset, run_ids=[run.pk], rule="all", use_verified=False)}
    results["coarse"] = {
        "planted": len(planted_coarse),
        "found": len(found),
        "precision": round(len(found & planted_coarse) / max(len(found), 1), 3),
        "recall": round(len(found & planted_coarse) / max(len(planted_coarse), 1), 3),
        "random_precision": round(len(planted_coarse) / max(len(caption_pk), 1), 3),
        "seconds": round(time.perf_counter() - start, 2),
    }
    print(json.dumps(results, indent=2))
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "enlargement.json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--pool", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=int, default=9)
    parser.add_argument("--k", type=int, default=20, help="k': each target's top k by image-image similarity")
    parser.add_argument("--duplicates", type=int, default=5, help="planted exact and near duplicates (each)")
    args = parser.parse_args()
    test_name = os.environ.get("BENCH_DATABASE_NAME", "bench_enlargement")
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = (
        test_name if connection.vendor == "postgresql" else None
    )
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        main(args)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
