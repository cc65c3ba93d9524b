"""Import throughput and peak memory of `dataset_import` on PostgreSQL, at two sizes.

Writes a COCO-format set (N images, 5 captions each; small distinct JPEGs, a fast plain variant of the
synthetic generator) into a temporary directory, imports it into a throwaway database in a fresh child
process, and prints images/s, captions/s and the child's peak RSS (ru_maxrss, the whole process: Python,
Django and the import). Run at 5,000 and 20,000 images to show the peak does not grow with the size.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/import.py [--sizes 5000,20000]

The database named in DATABASE_URL is only used to create and drop `vericap_bench`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = "vericap_bench"
WORDS = (
    "a",
    "man",
    "woman",
    "dog",
    "cat",
    "red",
    "blue",
    "small",
    "large",
    "riding",
    "sitting",
    "on",
    "next to",
    "the",
    "beach",
    "street",
    "table",
    "with",
    "two",
    "three",
    "bicycle",
    "umbrella",
    "kite",
    "field",
    "grass",
)


def write_dataset(out: Path, images: int, seed: int = 0) -> None:
    """N distinct 64x48 JPEGs and a COCO caption file, written in a streaming way."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    folder = out / "images"
    folder.mkdir(parents=True)
    with open(out / "captions.json", "w") as handle:
        handle.write('{"images": [')
        for i in range(1, images + 1):
            picture = Image.new("RGB", (64, 48), (i % 251, (i // 251) % 251, (i * 7) % 251))
            ImageDraw.Draw(picture).text((2, 18), str(i), fill=(255, 255, 255))
            picture.save(folder / f"{i:07d}.jpg", format="JPEG", quality=80)
            handle.write(
                ("," if i > 1 else "") + json.dumps({"id": i, "file_name": f"{i:07d}.jpg", "width": 64, "height": 48})
            )
        handle.write('], "annotations": [')
        first = True
        for i in range(1, images + 1):
            for k in range(5):
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))).capitalize() + "."
                handle.write(
                    ("" if first else ",") + json.dumps({"id": 1_000_000 + 5 * i + k, "image_id": i, "caption": text})
                )
                first = False
        handle.write("]}")


def child(captions: str, images: str) -> None:
    """Runs in a fresh process: migrate the bench database, import, print one JSON line of results."""
    sys.path.insert(0, str(ROOT))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotator.datasets.services.imports import dataset_import

    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    phases: dict[str, float] = {}

    def progress(phase: str, done: int, total: int) -> None:
        phases.setdefault(phase, time.perf_counter())

    started = time.perf_counter()
    dataset = dataset_import(name="bench", captions_path=captions, images_path=images, progress=progress)
    elapsed = time.perf_counter() - started
    again_started = time.perf_counter()
    again = dataset_import(name="bench", captions_path=captions, images_path=images)
    again_elapsed = time.perf_counter() - again_started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    marks = sorted(phases.items(), key=lambda item: item[1])
    print(
        json.dumps(
            {
                "images": dataset.images.count(),
                "captions": dataset.captions.count(),
                "seconds": elapsed,
                "peak_mb": peak_kb / 1024,
                "baseline_mb": baseline_kb / 1024,
                "phases": {name: round(at - started, 2) for name, at in marks},
                "rerun_seconds": again_elapsed,
                "rerun_created": again.report["images_created"] + again.report["captions_created"],
            }
        )
    )


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def admin(url: str, sql: str) -> None:
    import psycopg2

    connection = psycopg2.connect(url)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(sql)
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000", help="comma-separated image counts")
    parser.add_argument("--child", nargs=2, metavar=("CAPTIONS", "IMAGES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    server_url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
    bench_url = with_database(server_url, BENCH_DB)
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="vericap-bench-") as tmp:
            tmp = Path(tmp)
            t0 = time.perf_counter()
            write_dataset(tmp / "set", size)
            print(f"generated {size:,} images / {5 * size:,} captions in {time.perf_counter() - t0:.1f}s", flush=True)
            admin(server_url, f"DROP DATABASE IF EXISTS {BENCH_DB}")
            admin(server_url, f"CREATE DATABASE {BENCH_DB}")
            try:
                env = {
                    **os.environ,
                    "DATABASE_URL": bench_url,
                    "MEDIA_ROOT": str(tmp / "media"),
                    "DJANGO_SETTINGS_MODULE": "config.settings",
                    "CELERY_TASK_ALWAYS_EAGER": "true",
                }
                done = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        str(tmp / "set" / "captions.json"),
                        str(tmp / "set" / "images"),
                    ],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
            finally:
                admin(server_url, f"DROP DATABASE IF EXISTS {BENCH_DB}")
            if done.returncode != 0:
                sys.exit(f"import of {size} images failed:\n{done.stderr[-4000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            results.append(result)
            print(
                f"imported {result['images']:,} images and {result['captions']:,} captions in {result['seconds']:.1f}s: "
                f"{result['images'] / result['seconds']:,.0f} images/s, {result['captions'] / result['seconds']:,.0f} captions/s "
                f"(over the whole import: checks, files, thumbnails, rows); peak RSS {result['peak_mb']:.0f} MB "
                f"(Django loaded: {result['baseline_mb']:.0f} MB); phases started at {result['phases']}; "
                f"re-import {result['rerun_seconds']:.1f}s, {result['rerun_created']} rows created",
                flush=True,
            )
    if len(results) > 1:
        small, large = results[0], results[-1]
        print(
            f"peak RSS {small['peak_mb']:.0f} MB at {small['images']:,} images vs {large['peak_mb']:.0f} MB at "
            f"{large['images']:,} images: x{large['peak_mb'] / small['peak_mb']:.2f} for x{large['images'] / small['images']:.0f} the data"
        )
    worst = max(r["peak_mb"] for r in results)
    print(f"goal peak < 500 MB: {'met' if worst < 500 else 'MISSED'} ({worst:.0f} MB)")
    if worst >= 500 or any(r["rerun_created"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
