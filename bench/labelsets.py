"""Label sets on the real released data: imports, ECCV Caption Tables 2 and 3, evaluation against the reference.

In a throwaway PostgreSQL database `vericap_bench_labelsets` (or a temporary SQLite file when DATABASE_URL is
not PostgreSQL) this builds the COCO 5K test split with its real ids (placeholder pictures), then

- imports the two released ECCV Caption files, the released CxC SITS ratings, and the package's original
  COCO graph (timed), and makes the dataset's own original set and ECCV Caption's recipe
  (union of ECCV, CxC and COCO on ECCV's queries);
- prints Table 3 (positives over ECCV's 1,332 caption and 1,261 image queries), Table 2 (precision and
  recall of every set against every other) and the overlaps;
- scores a seeded random "model" against the ECCV, CxC and COCO sets with `evaluate` and with the
  eccv_caption package's reference code, and prints the largest absolute difference over all metrics.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/labelsets.py

Results are printed and written to bench/out/labelsets.json.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = "vericap_bench_labelsets"


def _setup() -> str:
    """Point Django at a fresh database and migrate it; returns a description of where."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        import psycopg2

        parts = urlsplit(url)
        admin = psycopg2.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 5432,
            user=parts.username or "postgres",
            password=parts.password,
            dbname=parts.path.lstrip("/") or "postgres",
        )
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {BENCH_DB}")
            cursor.execute(f"CREATE DATABASE {BENCH_DB}")
        admin.close()
        os.environ["DATABASE_URL"] = urlunsplit(parts._replace(path="/" + BENCH_DB))
        where = f"PostgreSQL database {BENCH_DB}"
    else:
        path = Path(tempfile.mkdtemp()) / "labelsets.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
        where = f"SQLite {path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return where


def _timed(label: str, timings: dict, function, **kwargs):
    start = time.perf_counter()
    result = function(**kwargs)
    timings[label] = round(time.perf_counter() - start, 2)
    return result


def main() -> None:
    where = _setup()
    from eccv_caption import Metrics
    from eccv_caption._metrics import compute_eccv_metrics, compute_r_at_k

    from annotator.labels.services.labelsets.builds import labelset_derive, labelset_from_original
    from annotator.labels.services.labelsets.imports import labelset_import
    from annotator.research.selectors.labelset_analyses import labelset_compare
    from annotator.research.services.labelset_evaluation import evaluate
    from tests.labelset_support import make_coco_test_dataset, package_file, random_rankings, sits_csv_gz

    timings: dict = {}
    dataset = _timed("dataset (5,000 images, 25,002 captions)", timings, make_coco_test_dataset)

    def split(prefix):
        return [
            (f"{prefix}_image_to_caption.json", package_file(f"{prefix}_image_to_caption.json")),
            (f"{prefix}_caption_to_image.json", package_file(f"{prefix}_caption_to_image.json")),
        ]

    eccv = _timed(
        "import ECCV (two released files)",
        timings,
        labelset_import,
        dataset=dataset,
        name="eccv",
        fmt="eccv_split",
        files=split("eccv"),
        annotators=["PVSE", "VSRN", "PCME", "ViLT", "CLIP"],
    )
    cxc = _timed(
        "import CxC SITS CSV",
        timings,
        labelset_import,
        dataset=dataset,
        name="cxc",
        fmt="cxc_sits",
        files=[("sits_test.csv.gz", sits_csv_gz())],
    )
    coco = _timed(
        "import COCO graph",
        timings,
        labelset_import,
        dataset=dataset,
        name="coco",
        fmt="eccv_split",
        files=split("original"),
    )
    own = _timed("original set of the dataset", timings, labelset_from_original, dataset=dataset, name="dataset-pairs")
    union = _timed(
        "derive ECCV ∪ CxC ∪ COCO on ECCV's queries",
        timings,
        labelset_derive,
        operands=[eccv, cxc, coco],
        operation="union",
        query_rule="first",
        name="eccv-recipe",
    )
    compared = _timed(
        "compare 4 sets", timings, labelset_compare, label_sets=[coco, cxc, eccv, union], queries_of=eccv, baseline=coco
    )

    metrics = Metrics()
    graphs = {"eccv": metrics.eccv_gts, "cxc": metrics.cxc_gts, "coco": metrics.coco_gts}
    ids = {"image": [str(i) for i in metrics.coco_gts["i2t"]], "caption": [str(c) for c in metrics.coco_gts["t2i"]]}
    as_str = [
        {d: {str(q): [str(t) for t in ts] for q, ts in g[d].items()} for d in ("i2t", "t2i")} for g in graphs.values()
    ]
    rankings = random_rankings(graphs=as_str, dataset_ids=ids, seed=11)
    as_int = {d: {int(q): [int(t) for t in items] for q, items in section.items()} for d, section in rankings.items()}
    agreement = {}
    for name, label_set in (("eccv", eccv), ("cxc", cxc), ("coco", coco)):
        start = time.perf_counter()
        ours = evaluate(label_set=label_set, rankings=rankings)
        timings[f"evaluate on {name}"] = round(time.perf_counter() - start, 2)
        worst = 0.0
        rows = {}
        for direction in ("i2t", "t2i"):
            reference = compute_eccv_metrics(as_int[direction], graphs[name][direction])
            expected = {
                "r1": float(reference["eccv_r1"]),
                "r5": float(compute_r_at_k(as_int[direction], graphs[name][direction], K=5)),
                "r10": float(compute_r_at_k(as_int[direction], graphs[name][direction], K=10)),
                "r_precision": float(reference["eccv_rprecision"]),
                "map_at_r": float(reference["eccv_map_at_r"]),
            }
            for metric, value in expected.items():
                worst = max(worst, abs(ours["scores"][direction][metric] - value))
            rows[direction] = {"ours": ours["scores"][direction], "queries": ours["counts"][direction]["scored"]}
        agreement[name] = {"max_abs_diff": worst, "scores": rows}

    print(f"Label sets on the real released data ({where})\n")
    print("Timings (s):")
    for label, seconds in timings.items():
        print(f"  {label:45s} {seconds:8.2f}")
    print(
        f"\nTable 3 over {eccv.label}'s queries (t2i {compared['query_counts']['t2i']}, i2t {compared['query_counts']['i2t']}):"
    )
    print(f"  {'set':18s} {'# positive images':>22s} {'# positive captions':>22s}")
    for row in compared["multiplicity"]:
        print(
            f"  {row['label_set']:18s} {row['t2i']['positives']:>14,d} (x{row['t2i']['ratio']:.2f})"
            f" {row['i2t']['positives']:>14,d} (x{row['i2t']['ratio']:.2f})"
        )
    print("\nTable 2 (precision / recall of the set against the reference, over the queries both judged):")
    print(f"  {'set':18s} {'reference':18s} {'I2T Prec':>9s} {'I2T Rec':>9s} {'T2I Prec':>9s} {'T2I Rec':>9s}")
    for row in compared["precision_recall"]:
        print(
            f"  {row['candidate']:18s} {row['reference']:18s} {100 * row['i2t']['precision']:9.1f} "
            f"{100 * row['i2t']['recall']:9.1f} {100 * row['t2i']['precision']:9.1f} {100 * row['t2i']['recall']:9.1f}"
        )
    print("\nEvaluation of a seeded random model: largest |evaluate - eccv_caption| over R@1/5/10, R-P, mAP@R:")
    for name, entry in agreement.items():
        print(
            f"  {name:5s} {entry['max_abs_diff']:.3e}  (i2t {entry['scores']['i2t']['queries']} queries, "
            f"t2i {entry['scores']['t2i']['queries']} queries)"
        )
    print(f"\nOwn original set: {own.stats['pairs']} pairs; ECCV recipe: {union.stats['i2t']} / {union.stats['t2i']}")
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "labelsets.json").write_text(
        json.dumps(
            {"where": where, "timings": timings, "compare": compared, "agreement": agreement}, indent=2, default=str
        )
    )


if __name__ == "__main__":
    main()
