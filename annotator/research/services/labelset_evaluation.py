"""Evaluate a model's rankings against a label set: ECCV Caption's R@1/5/10, R-Precision and mAP@R over
exactly the set's judged queries (annotator.analysis.metrics has the definitions; they equal the released
`eccv_caption.Metrics`).

Read-only. Warnings, never errors, for rankings that cover few of the set's queries or match none of its
ids, ranked ids the dataset does not have, and a model that was one of the machine annotators whose
proposals built the set (its scores are biased upward: ECCV Caption App. E.3).
"""

from __future__ import annotations

from annotator.analysis.metrics import METRIC_NAMES, evaluate_direction
from annotator.analysis.self_matches import self_matches_drop, self_matches_note
from annotator.labels.models.labelsets import LabelSet, LabelSetKind
from annotator.labels.selectors.labelsets import (
    QUERY_TARGET_SIDES,
    dataset_source_ids,
    labelset_label_maps,
    labelset_operands,
)
from annotator.ranking.models.ranking import Candidate
from annotator.research.coverage import low_coverage_warnings

SAME_MODEL_AGREEMENT = 0.9  # top-5 agreement with an annotator's stored run that names it the same model
SAME_MODEL_DEPTH = 5


def _crowd_runs(label_set: LabelSet, seen: set | None = None) -> list[int]:
    """Ranking runs whose proposals the crowd judged for this set (through derived sets too)."""
    seen = seen if seen is not None else set()
    if label_set.pk in seen:
        return []
    seen.add(label_set.pk)
    if label_set.kind == LabelSetKind.CROWD:
        return list(label_set.campaign.runs.values_list("pk", flat=True))
    if label_set.kind == LabelSetKind.DERIVED:
        return [run for operand in labelset_operands(label_set=label_set) for run in _crowd_runs(operand, seen)]
    return []


def _same_as_annotator(label_set: LabelSet, rankings: dict, ids: dict) -> list[str]:
    """Names of the set's annotators whose stored top 5 the rankings repeat (>= 90% of the pairs)."""
    runs = _crowd_runs(label_set)
    if not runs:
        return []
    found = []
    for run_id, annotator in (
        Candidate.objects.filter(run_id__in=runs).values_list("run_id", "run__annotator__name").distinct()
    ):
        agree = total = 0
        stored: dict[tuple[str, str], set] = {}
        rows = Candidate.objects.filter(run_id=run_id, rank__lte=SAME_MODEL_DEPTH).values_list(
            "direction", "query_id", "target_id"
        )
        for direction, query, target in rows.iterator(chunk_size=10_000):
            query_side, target_side = QUERY_TARGET_SIDES[direction]
            key = (direction, ids[query_side].get(query))
            stored.setdefault(key, set()).add(ids[target_side].get(target))
        for (direction, query), targets in stored.items():
            ranked = rankings.get(direction, {}).get(query)
            if ranked is None:
                continue
            agree += len(targets & set(ranked[:SAME_MODEL_DEPTH]))
            total += len(targets)
        if total and agree / total >= SAME_MODEL_AGREEMENT:
            found.append(annotator)
    return found


def labelset_evaluate(*, label_set: LabelSet, rankings: dict, model_name: str = "") -> dict:
    """Score `rankings` (as rankings_read returns them: {direction: {query source id: [target source ids,
    best first]}}) against `label_set`. Read-only, no locks.

    Queries are exactly the set's judged queries of each direction it has; one without positives cannot
    be scored and is counted apart; a query the rankings lack scores its positions as misses. A t2t / i2i
    query is dropped from its own ranking first (annotator.analysis.self_matches), counted in
    "self_matches_dropped" and said in a warning. Returns
    {"label_set": {id, name, version, label}, "model": model_name,
     "scores": {direction: {"r1", "r5", "r10", "r_precision", "map_at_r"}},
     "counts": {direction: {"queries", "scored", "without_positives", "ranked", "missing_rankings",
                            "ranked_outside_set", "unknown_targets", "self_matches_dropped"}},
     "warnings": [text, ...]}.
    """
    maps = labelset_label_maps(label_set=label_set)
    rankings, dropped = self_matches_drop(rankings)
    ids = dataset_source_ids(dataset_id=label_set.dataset_id)
    known = {"image": set(ids["image"].values()), "caption": set(ids["caption"].values())}
    scores, counts, warnings = {}, {}, []
    for direction, labels in maps.items():
        ranked = rankings.get(direction, {})
        means, base = evaluate_direction(ranked, labels, metrics=METRIC_NAMES)
        target_side = QUERY_TARGET_SIDES[direction][1]
        covered = sum(1 for query in labels if query in ranked)
        unknown_targets = sum(1 for items in ranked.values() for item in items if item not in known[target_side])
        scores[direction] = means
        counts[direction] = {
            "queries": len(labels),
            "scored": base["queries"],
            "without_positives": base["skipped_without_positives"],
            "ranked": covered,
            "missing_rankings": base["missing_rankings"],
            "ranked_outside_set": sum(1 for query in ranked if query not in labels),
            "unknown_targets": unknown_targets,
            "self_matches_dropped": dropped.get(direction, 0),
        }
        if dropped.get(direction):
            warnings.append(self_matches_note(direction, dropped[direction]))
        if ranked and covered == 0:
            warnings.append(
                f"{direction}: none of the rankings' {len(ranked)} query ids is a query of {label_set.label} "
                "(are they the dataset's source ids?); every query scored as a miss."
            )
        else:
            warnings += low_coverage_warnings(
                direction=direction, covered=covered, queries=len(labels), of=f"queries of {label_set.label}"
            )
        if unknown_targets:
            warnings.append(f"{direction}: {unknown_targets} ranked ids are not in dataset {label_set.dataset.name}.")
    for direction in sorted(set(rankings) - set(maps)):
        warnings.append(f"{direction}: {label_set.label} judged no {direction} query; these rankings are not scored.")
    names = {name.lower(): name for name in label_set.annotators}
    biased = [names[model_name.strip().lower()]] if model_name.strip().lower() in names else []
    biased += [name for name in _same_as_annotator(label_set, rankings, ids) if name not in biased]
    for name in biased:
        warnings.append(
            f"{name} proposed the candidates the judges of {label_set.label} saw; a model scored on labels it "
            "helped choose is favoured (ECCV Caption App. E.3): compare it on a set it did not build."
        )
    return {
        "label_set": {
            "id": label_set.pk,
            "name": label_set.name,
            "version": label_set.version,
            "label": label_set.label,
        },
        "model": model_name,
        "scores": scores,
        "counts": counts,
        "warnings": warnings,
    }


# The short name other code calls: `evaluate(label_set=..., rankings=..., model_name=...)`.
evaluate = labelset_evaluate
