"""Models on the old benchmark and on the renovated one, side by side (MSCOCO-FG Tables 4-6).

Old: the dataset's own pairs (one image per caption) over the gallery before enlargement (images that are
no gallery addition); the rankings are cut to that gallery. New: the renovated benchmark label set
(enlarged gallery, verified positives) scored with labelset_evaluate. Both use annotator.analysis.metrics.
Read-only, no locks.

A stored ranking run ranks the texts the ranking pipeline read (each caption's original text); to score a
model on the refined captions, rank them with it and bring the rankings (the label-set pages' "bring your
own ranking"), then compare that run here.
"""

from __future__ import annotations

from annotator.analysis.metrics import METRIC_NAMES, evaluate_direction
from annotator.models import Caption, Image, LabelSet, RankingRun
from annotator.selectors.labelsets import ranking_run_rankings
from annotator.services.labelsets.evaluation import labelset_evaluate
from annotator.services.refinement.benchmark import benchmark_check

TABLE_METRICS = ("r1", "r5", "r10")


def _old_labels(dataset_id: int) -> tuple[dict, set[str]]:
    old_images = dict(
        Image.objects.filter(dataset_id=dataset_id, gallery_addition__isnull=True).values_list("pk", "source_id")
    )
    i2t: dict[str, set] = {source: set() for source in old_images.values()}
    t2i: dict[str, set] = {}
    for caption_source, image_id in Caption.objects.filter(dataset_id=dataset_id).values_list("source_id", "image_id"):
        if image_id in old_images:
            t2i[caption_source] = {old_images[image_id]}
            i2t[old_images[image_id]].add(caption_source)
    return {"i2t": i2t, "t2i": t2i}, set(old_images.values())


def _cut_to_gallery(rankings: dict, gallery: set[str]) -> dict:
    """The rankings as if the added images were not there: none as a t2i target or an i2t query."""
    cut = {}
    if "t2i" in rankings:
        cut["t2i"] = {q: [t for t in targets if t in gallery] for q, targets in rankings["t2i"].items()}
    if "i2t" in rankings:
        cut["i2t"] = {q: targets for q, targets in rankings["i2t"].items() if q in gallery}
    return cut


def benchmark_compare(*, new: LabelSet, runs: list[RankingRun]) -> dict:
    """Per run: R@1/5/10 (and R-Precision, mAP@R) in i2t and t2i on the old and on the new benchmark, and the
    change. Returns {"benchmark": label, "gallery": {"old", "new"}, "rows": [...], "warnings": [...]}."""
    benchmark_check(new)
    labels, gallery = _old_labels(new.dataset_id)
    rows, warnings = [], []
    for run in runs:
        rankings = ranking_run_rankings(run=run)
        old_scores = {}
        for direction, direction_labels in labels.items():
            means, _counts = evaluate_direction(
                _cut_to_gallery(rankings, gallery).get(direction, {}), direction_labels, metrics=METRIC_NAMES
            )
            old_scores[direction] = means
        result = labelset_evaluate(label_set=new, rankings=rankings, model_name=run.annotator.name)
        warnings += [f"{run.annotator.name}: {w}" for w in result["warnings"]]
        row = {"run": run.pk, "model": run.annotator.name, "top_k": run.top_k, "old": old_scores, "new": {}}
        for direction in ("i2t", "t2i"):
            row["new"][direction] = result["scores"].get(direction, {})
            row.setdefault("delta", {})[direction] = {
                metric: (
                    None
                    if old_scores[direction].get(metric) is None or row["new"][direction].get(metric) is None
                    else row["new"][direction][metric] - old_scores[direction][metric]
                )
                for metric in METRIC_NAMES
            }
        rows.append(row)
    return {
        "benchmark": new.label,
        "gallery": {"old": len(gallery), "new": new.report.get("gallery", {}).get("images")},
        "rows": rows,
        "warnings": warnings,
    }
