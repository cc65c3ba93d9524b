"""One model's full scorecard: every metric of every protocol, each with its bootstrap interval. No ORM.

Protocols, per direction:
- `labels` (the evaluation's label set or campaign labels, over its judged queries): R@k, IR recall@k,
  R-Precision, mAP@R, graded R@1 and R-Precision, median and mean rank;
- `coco5k` (the dataset's original pairs, every image and caption of the test set): R@k, median and mean
  rank, the COCO 5K protocol when the dataset is COCO's 5K test split;
- `coco1k` (the same, within 5 folds of consecutive captions): COCO 1K R@k;
- `pmrp` (plausible matches from the images' instance classes): PMRP;
- `semantic` (a CIDEr relevance matrix over the test set): SR@k and NCS@k.
Caption-to-caption and image-to-image directions (Crisscrossed Captions STS / SIS) have the labels
protocol only. A protocol that lacks its data (no instance classes, no relevance matrix) is left out with
a note saying why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from annotator.analysis.retrieval import (
    RECALL_KS,
    QueryTable,
    as_grades,
    coco_folds,
    fold_table,
    judged_table,
    plausible_labels,
    pmrp_table,
)
from annotator.analysis.self_matches import self_matches_note
from annotator.analysis.semantic import semantic_table
from annotator.analysis.uncertainty import scores_with_intervals

IMAGE_TEXT = ("i2t", "t2i")
SAME_MODALITY = ("t2t", "i2i")
DIRECTIONS = IMAGE_TEXT + SAME_MODALITY

# Every reported metric: key, column title, protocol, True when higher is better. Display order.
METRICS: list[tuple[str, str, str, bool]] = [
    ("r1", "R@1", "labels", True),
    ("r5", "R@5", "labels", True),
    ("r10", "R@10", "labels", True),
    ("ir_r1", "IR R@1", "labels", True),
    ("ir_r5", "IR R@5", "labels", True),
    ("ir_r10", "IR R@10", "labels", True),
    ("r_precision", "R-Precision", "labels", True),
    ("map_at_r", "mAP@R", "labels", True),
    ("graded_r1", "graded R@1", "labels", True),
    ("graded_r_precision", "graded R-P", "labels", True),
    ("median_rank", "median rank", "labels", False),
    ("mean_rank", "mean rank", "labels", False),
    ("coco5k_r1", "5K R@1", "coco5k", True),
    ("coco5k_r5", "5K R@5", "coco5k", True),
    ("coco5k_r10", "5K R@10", "coco5k", True),
    ("coco5k_median_rank", "5K median rank", "coco5k", False),
    ("coco5k_mean_rank", "5K mean rank", "coco5k", False),
    ("coco1k_r1", "1K R@1", "coco1k", True),
    ("coco1k_r5", "1K R@5", "coco1k", True),
    ("coco1k_r10", "1K R@10", "coco1k", True),
    ("pmrp", "PMRP", "pmrp", True),
    ("sr_r1", "SR@1", "semantic", True),
    ("sr_r5", "SR@5", "semantic", True),
    ("sr_r10", "SR@10", "semantic", True),
    ("ncs1", "NCS@1", "semantic", True),
    ("ncs5", "NCS@5", "semantic", True),
    ("ncs10", "NCS@10", "semantic", True),
    # Crisscrossed Captions' Table 5 (annotator.analysis.cxc_table5): an evaluation of similarity scores.
    ("cxc_spearman", "CxC Spearman's R", "cxc", True),
]
METRIC_TITLES = {key: title for key, title, _, _ in METRICS}
HIGHER_IS_BETTER = {key: higher for key, _, _, higher in METRICS}


@dataclass
class Gallery:
    """The dataset-wide data of the COCO, PMRP and semantic protocols, as plain data with source ids.

    `caption_image` lists every caption of the test set with its image, in the dataset's order (the folds
    of the 1K protocol are runs of consecutive captions). `image_classes` is None when no instance classes
    were imported; `relevance` (images x captions, rows and columns in `images` / `captions` order) is None
    when the semantic protocol is not computed.
    """

    caption_image: list[tuple[str, str]]
    image_classes: dict[str, frozenset] | None = None
    relevance: np.ndarray | None = None
    images: list[str] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)
    relevance_metric: str = "CIDEr-D"

    def original(self) -> dict[str, dict[str, dict[str, float]]]:
        i2t: dict[str, dict[str, float]] = {}
        t2i: dict[str, dict[str, float]] = {}
        for caption, image in self.caption_image:
            i2t.setdefault(image, {})[caption] = 1.0
            t2i[caption] = {image: 1.0}
        return {"i2t": i2t, "t2i": t2i}


@dataclass(frozen=True)
class Settings:
    """How a scorecard is computed; part of an evaluation's key."""

    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    folds: int = 5
    pmrp_zetas: tuple[int, ...] = (0,)
    pmrp_cap: int | None = 50
    semantic_m: int | None = None  # None: as many as the query's original positives
    semantic_exclude_original: bool = False

    def as_json(self) -> dict:
        return {
            "resamples": self.resamples,
            "seed": self.seed,
            "confidence": self.confidence,
            "folds": self.folds,
            "pmrp_zetas": list(self.pmrp_zetas),
            "pmrp_cap": self.pmrp_cap,
            "semantic_m": self.semantic_m,
            "semantic_exclude_original": self.semantic_exclude_original,
        }


def _select(table: QueryTable, columns: Sequence[str], prefix: str) -> QueryTable:
    """Some columns of a table, renamed with a prefix (`rank` becomes `<prefix>rank`)."""
    indexes = [table.columns.index(column) for column in columns]
    return QueryTable(
        queries=table.queries,
        columns=[prefix + column for column in columns],
        values=table.values[:, indexes],
        counts=table.counts,
    )


def scorecard(
    rankings: Mapping[str, Mapping],
    judgements: Mapping[str, Mapping],
    *,
    test_set: Gallery | None = None,
    settings: Settings = Settings(),
    ks: Sequence[int] = RECALL_KS,
) -> dict:
    """`{"metrics": {direction: {metric: {"value", "low", "high"}}}, "protocols": {direction: {protocol:
    counts}}, "notes": [why a protocol is missing]}` for the directions the judgements (or, for the
    dataset-wide protocols, the rankings) have."""
    metrics: dict[str, dict] = {}
    protocols: dict[str, dict] = {}
    notes: list[str] = []
    plausible = None
    if test_set is not None and test_set.image_classes is not None:
        caption_image = dict(test_set.caption_image)
        plausible = {
            zeta: plausible_labels(test_set.image_classes, caption_image, zeta=zeta) for zeta in settings.pmrp_zetas
        }
    elif test_set is not None:
        notes.append("PMRP: the dataset has no instance classes; import them (manage.py import_categories).")
    if test_set is not None and test_set.relevance is None:
        notes.append("SR@k and NCS@k: no relevance matrix was computed for this dataset.")
    original = test_set.original() if test_set is not None else {}
    folds = coco_folds(test_set.caption_image, settings.folds) if test_set is not None else []
    directions = [d for d in DIRECTIONS if d in judgements or (test_set is not None and d in IMAGE_TEXT)]
    for direction in directions:
        ranked = rankings.get(direction, {})
        tables: dict[str, QueryTable] = {}
        if judgements.get(direction):
            tables["labels"] = judged_table(
                ranked, as_grades(judgements[direction]), ks=ks, exclude_self=direction in SAME_MODALITY
            )
            if tables["labels"].counts.get("self_matches_dropped"):
                notes.append(self_matches_note(direction, tables["labels"].counts["self_matches_dropped"]))
        if test_set is not None and direction in IMAGE_TEXT:
            full = judged_table(ranked, original[direction], ks=ks)
            tables["coco5k"] = _select(full, [f"r{k}" for k in ks] + ["rank"], "coco5k_")
            tables["coco1k"] = _select(
                fold_table(ranked, original[direction], folds, direction=direction, ks=ks),
                [f"r{k}" for k in ks],
                "coco1k_",
            )
            if plausible is not None:
                tables["pmrp"] = pmrp_table(
                    ranked, {zeta: maps[direction] for zeta, maps in plausible.items()}, cap=settings.pmrp_cap
                )
            if test_set.relevance is not None:
                tables["semantic"] = _semantic(ranked, direction, test_set, original, settings, ks)
        metrics[direction] = {}
        protocols[direction] = {}
        for protocol, table in tables.items():
            scored = scores_with_intervals(
                table, resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence
            )
            metrics[direction].update(scored)
            protocols[direction][protocol] = table.counts
    return {"metrics": metrics, "protocols": protocols, "notes": notes}


def _semantic(ranked, direction, test_set: Gallery, original, settings: Settings, ks) -> QueryTable:
    image_index = {image: row for row, image in enumerate(test_set.images)}
    caption_index = {caption: column for column, caption in enumerate(test_set.captions)}
    if direction == "i2t":
        relevance, queries, targets = test_set.relevance, image_index, caption_index
    else:
        relevance, queries, targets = test_set.relevance.T, caption_index, image_index
    own = {query: set(positives) for query, positives in original[direction].items()}
    m = (
        settings.semantic_m
        if settings.semantic_m is not None
        else {query: len(own.get(query, ())) for query in queries}
    )
    return semantic_table(
        ranked,
        relevance,
        queries,
        targets,
        m=m,
        ks=ks,
        exclude=own if settings.semantic_exclude_original else None,
    )
