"""Label export throughput and peak memory on PostgreSQL, as ratios to a bare COPY of the same rows.

Generates campaigns of 250,000 and 1,000,000 labels with SQL (generate_series) in a throwaway database
`vericap_bench_export`, then, each in a fresh child process and repeated, measures:

- copy:     `COPY (SELECT <the label rows: ids, source ids, label, confidence>) TO STDOUT` into a file;
            the baseline every ratio is taken against (same rows, same run);
- json:     the ECCV Caption JSON export (`labels_write(format="eccv_json")`) into a file;
- jsonl:    the JSONL export (one line per label with its provenance) into a file;
- pg_first: `labels_export_postgres` into an empty table of a second database (`..._target`);
- pg_rerun: the same again into the now full table (temporary table + upsert + delete of the vanished).

Time is the best of the repeats (the machine is shared); memory is the child's peak RSS (ru_maxrss: Python,
Django, the driver and the export together) and its growth over the RSS the child had before exporting.
Ratios <= 3 are the goal; a flat peak between 250K and 1M labels shows memory does not grow with labels.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/export.py [--sizes 250000,1000000]

The database in DATABASE_URL is only used to create (and, with --drop, drop) the two bench databases.
Results are printed and written to bench/out/export.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = "vericap_bench_export"
TARGET_DB = "vericap_bench_export_target"
KINDS = ("copy", "json", "jsonl", "pg_first", "pg_rerun")
PAIRS_PER_IMAGE = 20  # each image with the 5 captions of itself and of the next three images


def _url_for(base: str, database: str) -> str:
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path="/" + database))


def _dsn(url: str) -> str:
    parts = urlsplit(url)
    fields = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5432,
        "user": parts.username or "postgres",
        "dbname": parts.path.lstrip("/"),
    }
    if parts.password:
        fields["password"] = parts.password
    return " ".join(f"{key}={value}" for key, value in fields.items())


def _django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def generate(size: int) -> dict:
    """One dataset + campaign with about `size` labels (70% of the pairs asked i2t, 30% t2i; ~half positive)."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotator.models import Campaign, Dataset, DatasetStatus, MachineAnnotator, RankingRun

    images = max(1, size // PAIRS_PER_IMAGE)
    owner, _ = get_user_model().objects.get_or_create(username="bench")
    with transaction.atomic():
        dataset = Dataset.objects.create(name=f"bench-{size}-{time.time_ns()}", owner=owner, status=DatasetStatus.READY)
        annotator, _ = MachineAnnotator.objects.get_or_create(name="bench-tfidf", defaults={"kind": "tfidf_pivot"})
        run = RankingRun.objects.create(annotator=annotator, dataset=dataset, status="succeeded")
        campaign = Campaign.objects.create(name=f"bench {size}", owner=owner, dataset=dataset, direction="both")
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO annotator_image (dataset_id, source_id, file_name, file, thumbnail, content_hash, width, height) "
                "SELECT %s, (100000 + g)::text, g || '.jpg', 'images/' || g || '.jpg', '', md5(g::text), 64, 48 "
                "FROM generate_series(1, %s) g",
                [dataset.pk, images],
            )
            cursor.execute(
                "INSERT INTO annotator_caption (dataset_id, image_id, source_id, text) "
                "SELECT %s, i.id, (i.source_id::bigint * 10 + k)::text, 'A caption number ' || k || ' of ' || i.source_id "
                "FROM annotator_image i, generate_series(0, 4) k WHERE i.dataset_id = %s",
                [dataset.pk, dataset.pk],
            )
            cursor.execute("ANALYZE annotator_image")
            cursor.execute("ANALYZE annotator_caption")
            cursor.execute(
                "INSERT INTO annotator_pair (campaign_id, kind, image_id, caption_id, is_original, direction, query_id, "
                "sampling_method) "
                "SELECT %s, 'image_caption', i.id, c.id, c.image_id = i.id, "
                "CASE WHEN i.id %% 10 < 7 THEN 'i2t' ELSE 't2i' END, CASE WHEN i.id %% 10 < 7 THEN i.id ELSE c.id END, '' "
                "FROM annotator_image i CROSS JOIN generate_series(0, 3) d "
                "JOIN annotator_caption c ON c.image_id = i.id + d WHERE i.dataset_id = %s AND c.dataset_id = i.dataset_id",
                [campaign.pk, dataset.pk],
            )
            cursor.execute("ANALYZE annotator_image")
            cursor.execute("ANALYZE annotator_caption")
            cursor.execute("ANALYZE annotator_pair")
            cursor.execute(
                "INSERT INTO annotator_pairsource (pair_id, run_id, direction, rank, score) "
                "SELECT p.id, %s, p.direction, 1 + p.id %% 5, 0.9 - (p.id %% 5) / 10.0 FROM annotator_pair p "
                "WHERE p.campaign_id = %s",
                [run.pk, campaign.pk],
            )
            cursor.execute(
                "INSERT INTO annotator_label (pair_id, method, choice, score, is_positive, is_positive_strict, "
                "confidence, answer_count, updated_at) "
                "SELECT id, 'majority', (ARRAY['yes', 'partially_yes', 'mostly_no', 'no'])[h + 1], NULL, h < 2, h = 0, "
                "0.5 + h / 8.0, 3, now() FROM (SELECT id, abs(hashtext(id::text)) %% 4 AS h FROM annotator_pair "
                "WHERE campaign_id = %s) p",
                [campaign.pk],
            )
            cursor.execute(
                "SELECT count(*) FROM annotator_label l JOIN annotator_pair p ON p.id = l.pair_id WHERE p.campaign_id = %s",
                [campaign.pk],
            )
            labels = cursor.fetchone()[0]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"size": size, "campaign": campaign.pk, "labels": labels}


def measure(kind: str, campaign_id: int, target_url: str) -> dict:
    """Runs in a fresh child: one export of `kind`, timed, with the child's RSS before and at its peak."""
    from django.db import connection, transaction

    from annotator.labels.export_columns import table_columns
    from annotator.labels.services.exports.postgres import labels_export_postgres
    from annotator.labels.services.exports.rows import label_rows_sql
    from annotator.labels.services.exports.write import labels_write
    from annotator.models import Campaign

    campaign = Campaign.objects.get(pk=campaign_id)
    table = f"labels_{campaign_id}"
    if kind == "pg_first":
        import psycopg2

        with psycopg2.connect(_dsn(target_url)) as target, target.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
    connection.ensure_connection()
    before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        if kind == "copy":
            with transaction.atomic(), connection.cursor() as cursor:
                select = cursor.cursor.mogrify(
                    label_rows_sql(table_columns(), ordered=False), [campaign_id, "majority"]
                ).decode()
                cursor.cursor.copy_expert(f"COPY ({select}) TO STDOUT", out, size=1 << 18)
                rows = cursor.cursor.rowcount
        elif kind in ("json", "jsonl"):
            rows = labels_write(
                out=out,
                campaign_id=campaign_id,
                format="eccv_json" if kind == "json" else "jsonl",
                method="majority",
                variant="lenient",
                merge_original=False,
            )
        else:
            rows = labels_export_postgres(campaign=campaign, method="majority", dsn=_dsn(target_url), table=table)[
                "rows"
            ]
        seconds = time.perf_counter() - started
        size = out.tell()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "kind": kind,
        "seconds": seconds,
        "rows": rows,
        "bytes": size,
        "rss_before_mb": before_kb / 1024,
        "peak_rss_mb": peak_kb / 1024,
    }


def _child(*args: str) -> dict:
    result = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"child {args} failed")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="250000,1000000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--drop", action="store_true", help="drop the bench databases at the end")
    parser.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    if not base.startswith("postgres"):
        raise SystemExit("bench/export.py needs PostgreSQL: set DATABASE_URL=postgres://...")
    bench_url, target_url = _url_for(base, BENCH_DB), _url_for(base, TARGET_DB)

    if args.child:
        _django(bench_url)
        if args.child[0] == "setup":
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            print(json.dumps([generate(int(size)) for size in args.child[1:]]))
        else:
            print(json.dumps(measure(args.child[0], int(args.child[1]), target_url)))
        return

    import psycopg2

    admin = psycopg2.connect(_dsn(_url_for(base, "postgres")))
    admin.autocommit = True
    with admin.cursor() as cursor:
        for name in (BENCH_DB, TARGET_DB):
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
            cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    sizes = [int(size) for size in args.sizes.split(",")]
    started = time.perf_counter()
    campaigns = _child("--child", "setup", *map(str, sizes))
    print(f"generated {', '.join(str(c['labels']) for c in campaigns)} labels in {time.perf_counter() - started:.0f} s")

    results = []
    for campaign in campaigns:
        runs = {kind: [] for kind in KINDS}
        for _ in range(args.repeats):
            for kind in KINDS:
                runs[kind].append(_child("--child", kind, str(campaign["campaign"])))
        best = {kind: min(runs[kind], key=lambda r: r["seconds"]) for kind in KINDS}
        peak = {kind: max(r["peak_rss_mb"] for r in runs[kind]) for kind in KINDS}
        growth = {kind: max(r["peak_rss_mb"] - r["rss_before_mb"] for r in runs[kind]) for kind in KINDS}
        base_time, base_peak = best["copy"]["seconds"], peak["copy"]
        row = {"labels": campaign["labels"], "kinds": {}}
        for kind in KINDS:
            row["kinds"][kind] = {
                "seconds": round(best[kind]["seconds"], 3),
                "time_ratio": round(best[kind]["seconds"] / base_time, 2),
                "peak_rss_mb": round(peak[kind], 1),
                "rss_growth_mb": round(growth[kind], 1),
                "peak_ratio": round(peak[kind] / base_peak, 2),
                "rows": best[kind]["rows"],
                "bytes": best[kind]["bytes"],
            }
        results.append(row)

    print(f"\n{'labels':>9} {'export':<9} {'seconds':>8} {'x COPY':>7} {'peak MB':>8} {'x COPY':>7} {'growth MB':>10}")
    for row in results:
        for kind, value in row["kinds"].items():
            print(
                f"{row['labels']:>9} {kind:<9} {value['seconds']:>8.2f} {value['time_ratio']:>7.2f} "
                f"{value['peak_rss_mb']:>8.1f} {value['peak_ratio']:>7.2f} {value['rss_growth_mb']:>10.1f}"
            )
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "export.json").write_text(json.dumps({"repeats": args.repeats, "results": results}, indent=2))
    if args.drop:
        with admin.cursor() as cursor:
            for name in (BENCH_DB, TARGET_DB):
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.close()


if __name__ == "__main__":
    main()
