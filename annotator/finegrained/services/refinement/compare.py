"""Models on the old benchmark and on the renovated one, side by side (MSCOCO-FG Tables 4-6).

One model's rankings over both galleries, on the same queries: the old benchmark's (every original
image for i2t, every caption for t2i). Old: the dataset's own pairs (one image per caption) with the rankings
cut to the gallery before enlargement (the added images taken out). New: the renovated benchmark label set's
positives (verified pairs, added images among them) of those same queries, over the whole ranked gallery.
An added image is never a query on either side, so a model is not charged for images nobody asked it to rank
as queries. Both use annotator.analysis.metrics. Read-only, no locks.

A run that did not rank the new gallery cannot show what the added images do, and is refused (listed in
`refused` with the reason, never scored): one made before the last image was added, or one whose
caption-to-image rankings list none of the added images.

A stored ranking run ranks the texts the ranking pipeline read (each caption's original text); to score a
model on the refined captions, rank them with it and bring the rankings (the label-set pages' "bring your
own ranking"), then compare that run here.
"""

from __future__ import annotations

from django.db.models import Max

from annotator.analysis.metrics import METRIC_NAMES, evaluate_direction
from annotator.datasets.models.dataset import Caption, Image
from annotator.finegrained.models.pools import GalleryAddition
from annotator.finegrained.services.refinement.benchmark import benchmark_check
from annotator.labels.models.labelsets import LabelSet
from annotator.labels.selectors.labelsets import labelset_label_maps, ranking_run_rankings
from annotator.ranking.models.ranking import RankingRun

TABLE_METRICS = ("r1", "r5", "r10")


def _old_labels(dataset_id: int) -> tuple[dict, set[str], set[str]]:
    """The old benchmark's labels, its gallery (original images) and the added images (source ids)."""
    old_images, added = {}, set()
    for pk, source_id, addition in Image.objects.filter(dataset_id=dataset_id).values_list(
        "pk", "source_id", "gallery_addition"
    ):
        if addition is None:
            old_images[pk] = source_id
        else:
            added.add(source_id)
    i2t: dict[str, set] = {source: set() for source in old_images.values()}
    t2i: dict[str, set] = {}
    for caption_source, image_id in Caption.objects.filter(dataset_id=dataset_id).values_list("source_id", "image_id"):
        if image_id in old_images:
            t2i[caption_source] = {old_images[image_id]}
            i2t[old_images[image_id]].add(caption_source)
    return {"i2t": i2t, "t2i": t2i}, set(old_images.values()), added


def _cut_to_gallery(rankings: dict, gallery: set[str]) -> dict:
    """The rankings as if the added images were not there: none as a t2i target or an i2t query."""
    cut = {}
    if "t2i" in rankings:
        cut["t2i"] = {q: [t for t in targets if t in gallery] for q, targets in rankings["t2i"].items()}
    if "i2t" in rankings:
        cut["i2t"] = {q: targets for q, targets in rankings["i2t"].items() if q in gallery}
    return cut


def _new_labels(new: LabelSet, old: dict) -> dict:
    """The renovated set's positives of the old benchmark's queries (a query it did not judge keeps none)."""
    maps = labelset_label_maps(label_set=new)
    return {direction: {query: maps.get(direction, {}).get(query, []) for query in old[direction]} for direction in old}


def coverage_problem(
    *, run: RankingRun, rankings: dict, added: set[str], enlarged_at, gallery: set[str] | None = None
) -> str | None:
    """Why `run` cannot be compared over the new gallery, or None when it ranked it (or nothing was added).
    With `gallery` (the original images), a run whose caption-to-image rankings list none of them (the
    enlargement's own run of added images, say) is refused too: it ranked no old gallery to compare with."""
    if not added:
        return None
    if gallery is not None and "t2i" in rankings:
        ranked = {target for targets in rankings["t2i"].values() for target in targets}
        if not ranked & gallery:
            return "its caption-to-image rankings list none of the original images: it ranked no whole gallery"
    if enlarged_at is not None and run.created_at < enlarged_at:
        return "it was ranked before the gallery was enlarged, so it never saw the added images; rank again"
    ranked = {target for targets in rankings.get("t2i", {}).values() for target in targets}
    if "t2i" in rankings and not ranked & added:
        return (
            f"none of its caption-to-image rankings lists any of the {len(added)} added images: it did not rank "
            "the new gallery"
        )
    return None


def benchmark_compare(*, new: LabelSet, runs: list[RankingRun]) -> dict:
    """Per run that ranked the new gallery: R@1/5/10 (and R-Precision, mAP@R) in i2t and t2i on the old and on
    the new benchmark over the same queries, and the change. Returns {"benchmark": label, "gallery": {"old",
    "new"}, "queries": {"i2t", "t2i"}, "rows": [...], "refused": [{"run", "model", "reason"}], "warnings"}."""
    benchmark_check(new)
    labels, gallery, added = _old_labels(new.dataset_id)
    new_labels = _new_labels(new, labels)
    enlarged_at = GalleryAddition.objects.filter(image__dataset_id=new.dataset_id).aggregate(last=Max("created_at"))[
        "last"
    ]
    rows, refused, warnings = [], [], []
    for run in runs:
        rankings = ranking_run_rankings(run=run)
        problem = coverage_problem(run=run, rankings=rankings, added=added, enlarged_at=enlarged_at, gallery=gallery)
        if problem:
            refused.append({"run": run.pk, "model": run.annotator.name, "reason": problem})
            continue
        row = {"run": run.pk, "model": run.annotator.name, "top_k": run.top_k, "old": {}, "new": {}, "delta": {}}
        for direction in ("i2t", "t2i"):
            old_scores, old_counts = evaluate_direction(
                _cut_to_gallery(rankings, gallery).get(direction, {}), labels[direction], metrics=METRIC_NAMES
            )
            new_scores, _ = evaluate_direction(rankings.get(direction, {}), new_labels[direction], metrics=METRIC_NAMES)
            row["old"][direction], row["new"][direction] = old_scores, new_scores
            row["delta"][direction] = {
                metric: (
                    None
                    if old_scores.get(metric) is None or new_scores.get(metric) is None
                    else new_scores[metric] - old_scores[metric]
                )
                for metric in METRIC_NAMES
            }
            if old_counts["missing_rankings"]:
                warnings.append(
                    f"{run.annotator.name}: {old_counts['missing_rankings']} {direction} queries have no ranking "
                    "(misses on both sides)."
                )
        rows.append(row)
    return {
        "benchmark": new.label,
        "gallery": {"old": len(gallery), "new": new.report.get("gallery", {}).get("images")},
        "queries": {direction: len(labels[direction]) for direction in labels},
        "rows": rows,
        "refused": refused,
        "warnings": warnings,
    }
