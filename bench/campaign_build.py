"""Benchmark: build a campaign at ECCV Caption's sizes and check it like the paper (Sec. 3.2).

ECCV Caption: 1,261 image queries and 1,333 caption queries, five machine annotators, each annotator's
top 5 per query pooled: (1,261 + 1,333) x 5 x 5 = 64,850 proposals, 46,424 unique pairs, HITs of
16 candidates + 1 gold positive + 1 gold negative (a random pair in no annotator's top 25).

Here: a synthetic dataset of 1,261 images x 5 captions (the COCO test subset's 6,305 captions), five
synthetic annotators that each store their top 25 in both directions for every query (946k candidate
rows; the annotators share a noisy notion of relevance, so their pools overlap like real models'), and
one campaign, direction `both`, 1,333 sampled queries per stage (all 1,261 images for i2t). It prints the
counts, asserts 16 + 1 + 1 in every HIT and no gold negative in any annotator's top 25, checks that the
same seed builds the same campaign, and reports the build time.

Run on PostgreSQL (the default here; it creates and drops its own database `bench_campaign_build`):
    .venv/bin/python bench/campaign_build.py
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x .venv/bin/python bench/campaign_build.py
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Count, Exists, OuterRef, Q  # noqa: E402

IMAGES = 1261
CAPTIONS_PER_IMAGE = 5
CAPTION_QUERIES = 1333
ANNOTATORS = 5
TOP_K = 25
POOL_DEPTH = 5
SHORTLIST = 60  # targets each query's annotators choose their top 25 from
SEED = 2022


def synthetic_candidates(rng, query_ids, target_ids, own_targets, run_ids, direction):
    """Rows (run, direction, query, target, rank, score): each annotator ranks a shared shortlist with its own noise."""
    n = len(query_ids)
    shortlist = np.empty((n, SHORTLIST), dtype=np.int64)
    for i in range(n):
        own = own_targets[i]
        others = rng.choice(target_ids, size=SHORTLIST + len(own), replace=False)
        others = others[~np.isin(others, own)][: SHORTLIST - len(own)]
        shortlist[i] = np.r_[own, others]
    base = np.sort(rng.random((n, SHORTLIST)), axis=1)[:, ::-1]  # own partners first, then decreasing
    rows = []
    for run_id in run_ids:
        scores = base + rng.normal(0, 0.45, size=base.shape)
        order = np.argsort(-scores, axis=1)[:, :TOP_K]
        targets = np.take_along_axis(shortlist, order, axis=1)
        top_scores = np.take_along_axis(scores, order, axis=1)
        for rank in range(TOP_K):
            rows.append(
                np.c_[np.full(n, run_id), query_ids, targets[:, rank], np.full(n, rank + 1), top_scores[:, rank]]
            )
    data = np.concatenate(rows)
    return direction, data


def write_candidates(direction, data):
    from annotator.models import Candidate

    if connection.vendor == "postgresql":
        from workers.ranking.store import copy_buffer, copy_rows  # COPY text from annotator.core.bulk, the one encoder

        columns = data[:, 1].astype(np.int64), data[:, 2].astype(np.int64), data[:, 3].astype(np.int64), data[:, 4]
        for run_id in np.unique(data[:, 0]).astype(np.int64).tolist():
            rows = data[:, 0] == run_id
            queries, targets, ranks, scores = (column[rows] for column in columns)
            copy_rows(
                copy_buffer(
                    run_id=run_id, direction=direction, queries=queries, targets=targets, ranks=ranks, scores=scores
                )
            )
    else:
        Candidate.objects.bulk_create(
            (
                Candidate(run_id=int(r), direction=direction, query_id=int(q), target_id=int(t), rank=int(k), score=s)
                for r, q, t, k, s in data
            ),
            batch_size=5000,
        )


def backend_cpu_seconds() -> float | None:
    """CPU seconds used so far by this connection's PostgreSQL backend process (same machine), else None."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    from django.contrib.auth import get_user_model

    from annotator.campaigns.selectors.campaigns import campaign_statistics
    from annotator.campaigns.services.build import campaign_build
    from annotator.campaigns.services.lifecycle import campaign_create
    from annotator.models import (
        Campaign,
        Candidate,
        Caption,
        Dataset,
        DatasetStatus,
        Hit,
        HitItem,
        Image,
        ItemRole,
        MachineAnnotator,
        Profile,
        RankingRun,
        Role,
        RunStatus,
    )

    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    owner = get_user_model().objects.create_user("bench-requester", password="bench-password-1")
    Profile.objects.create(user=owner, role=Role.REQUESTER)
    dataset = Dataset.objects.create(name="eccv-synthetic", status=DatasetStatus.READY, owner=owner)
    images = Image.objects.bulk_create(
        [
            Image(
                dataset=dataset,
                source_id=str(i),
                file_name=f"{i}.jpg",
                file=f"images/{i}.jpg",
                content_hash=f"{i:064x}",
                width=640,
                height=480,
            )
            for i in range(IMAGES)
        ],
        batch_size=2000,
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(dataset=dataset, image=image, source_id=f"{i}-{j}", text=f"caption {j} of image {i}")
            for i, image in enumerate(images)
            for j in range(CAPTIONS_PER_IMAGE)
        ],
        batch_size=2000,
    )
    image_ids = np.array([im.pk for im in images], dtype=np.int64)
    caption_ids = np.array([c.pk for c in captions], dtype=np.int64)
    caption_image = np.array([c.image_id for c in captions], dtype=np.int64)
    runs = []
    for a in range(ANNOTATORS):
        annotator = MachineAnnotator.objects.create(name=f"synthetic-{a}", kind="external")
        runs.append(
            RankingRun.objects.create(annotator=annotator, dataset=dataset, status=RunStatus.SUCCEEDED, top_k=TOP_K)
        )
    run_ids = [r.pk for r in runs]
    own_captions = [caption_ids[caption_image == img][:2] for img in image_ids]
    write_candidates(*synthetic_candidates(rng, image_ids, caption_ids, own_captions, run_ids, "i2t"))
    own_images = [np.array([img]) for img in caption_image]
    write_candidates(*synthetic_candidates(rng, caption_ids, image_ids, own_images, run_ids, "t2i"))
    rows = Candidate.objects.filter(run__in=runs).count()
    print(
        f"setup: {IMAGES} images, {len(caption_ids)} captions, {ANNOTATORS} annotators, "
        f"{rows} candidate rows (top {TOP_K}, both directions) in {time.perf_counter() - started:.1f} s"
    )

    def build(name):
        campaign = campaign_create(
            owner=owner,
            dataset=dataset,
            runs=runs,
            name=name,
            direction="both",
            sample_count=CAPTION_QUERIES,
            pool_depth=POOL_DEPTH,
            gold_exclusion_depth=TOP_K,
            seed=SEED,
            reward_cents=140,
        )
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        db0 = backend_cpu_seconds()
        if os.environ.get("BENCH_PROFILE"):
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            campaign = profiler.runcall(campaign_build, campaign=campaign)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
        else:
            campaign = campaign_build(campaign=campaign)
        build_cpu[name] = time.process_time() - cpu0
        db1 = backend_cpu_seconds()
        build_db_cpu[name] = None if db0 is None or db1 is None else db1 - db0
        return campaign, time.perf_counter() - t0

    build_cpu = {}
    build_db_cpu = {}

    campaign, seconds = build("ECCV-size")
    stats = campaign_statistics(campaign=campaign, include_progress=False)
    stages = {s["direction"]: s for s in campaign.build_report["stages"]}
    print()
    print("                      ECCV Caption (paper)   this build")
    print(f"image queries         {1261:>20,}   {stages['i2t']['query_count']:>10,}")
    print(f"caption queries       {1333:>20,}   {stages['t2i']['query_count']:>10,}")
    print(f"proposals             {64850:>20,}   {stats['proposals']:>10,}")
    print(f"unique pairs          {46424:>20,}   {stats['unique_pairs']:>10,}")
    print(
        f"HITs (16+1+1)         {'2,160 assigned':>20}   {stats['hits']:>10,}"
        f"   (i2t {stats['hits_by_stage'].get('i2t', 0):,}, t2i {stats['hits_by_stage'].get('t2i', 0):,})"
    )
    print(f"gold pairs            {'':>20}   {stats['gold_pairs']:>10,}")
    print(
        f"cost at $1.40/HIT +{campaign.platform_fee_percent:.0f}%   {'':>9}   ${stats['cost']['total_cents'] / 100:>9,.2f}"
    )
    db_cpu = build_db_cpu["ECCV-size"]
    print(
        f"build time            {'':>20}   {seconds:>9.2f} s wall (load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores)"
    )
    print(
        f"build CPU             {'':>20}   {build_cpu['ECCV-size']:>9.2f} s Python"
        + (
            f" + {db_cpu:.2f} s PostgreSQL backend = {build_cpu['ECCV-size'] + db_cpu:.2f} s"
            if db_cpu is not None
            else ""
        )
    )
    phases = campaign.build_report.get("timings", {})
    print(
        "  phases: "
        + ", ".join(f"{name} {value:.2f} s" for name, value in phases.items())
        + f", statistics + commit {seconds - sum(phases.values()):.2f} s"
    )

    # Every HIT holds 16 + 1 + 1, no pair twice.
    per_hit = (
        Hit.objects.filter(campaign=campaign)
        .annotate(
            c=Count("items", filter=Q(items__role=ItemRole.CANDIDATE)),
            p=Count("items", filter=Q(items__role=ItemRole.GOLD_POSITIVE)),
            n=Count("items", filter=Q(items__role=ItemRole.GOLD_NEGATIVE)),
            pairs=Count("items__pair", distinct=True),
        )
        .values_list("c", "p", "n", "pairs")
    )
    compositions = set(per_hit)
    assert compositions == {(16, 1, 1, 18)}, compositions
    # No gold negative is in any annotator's top 25 for its query (in the HIT's direction).
    negatives = HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.GOLD_NEGATIVE)
    in_top = Candidate.objects.filter(run__in=runs, rank__lte=TOP_K)
    leaked = negatives.filter(
        Q(hit__stage="i2t")
        & Exists(
            in_top.filter(direction="i2t", query_id=OuterRef("pair__image_id"), target_id=OuterRef("pair__caption_id"))
        )
        | Q(hit__stage="t2i")
        & Exists(
            in_top.filter(direction="t2i", query_id=OuterRef("pair__caption_id"), target_id=OuterRef("pair__image_id"))
        )
    ).count()
    assert leaked == 0, f"{leaked} gold negatives are in some annotator's top {TOP_K}"
    assert not negatives.filter(pair__is_original=True).exists()
    assert not HitItem.objects.filter(
        hit__campaign=campaign, role=ItemRole.GOLD_POSITIVE, pair__is_original=False
    ).exists()
    reuse = (
        HitItem.objects.filter(hit__campaign=campaign)
        .exclude(role=ItemRole.CANDIDATE)
        .values("pair_id")
        .annotate(n=Count("hit_id", distinct=True))
        .order_by("-n")
        .values_list("n", flat=True)
        .first()
    )
    assert reuse <= campaign.gold_reuse_limit
    print(
        f"checked: every HIT 16 + 1 + 1 with no pair twice; {negatives.count():,} gold negatives, none in any "
        f"annotator's top {TOP_K}; gold used in at most {reuse} HITs (limit {campaign.gold_reuse_limit})"
    )

    again, seconds_again = build("ECCV-size, same seed")

    def snapshot(c):
        return list(
            HitItem.objects.filter(hit__campaign=c)
            .order_by("hit__index", "position")
            .values_list("hit__index", "position", "role", "pair__image_id", "pair__caption_id")
        )

    assert snapshot(campaign) == snapshot(again), "the same seed built a different campaign"
    t0 = time.perf_counter()
    campaign_build(campaign=again)
    idempotent = time.perf_counter() - t0
    print(
        f"checked: the same seed builds the same campaign item for item ({seconds_again:.2f} s); "
        f"building it again is a no-op ({idempotent * 1000:.0f} ms)"
    )
    print(f"database: {connection.vendor}")
    return Campaign.objects.count()


if __name__ == "__main__":
    test_name = os.environ.get("BENCH_DATABASE_NAME", "bench_campaign_build")
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = (
        test_name if connection.vendor == "postgresql" else None
    )
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        main()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
