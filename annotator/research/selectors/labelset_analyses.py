"""Analyses of label sets (read-only): ECCV Caption's Tables 2 and 3, overlaps, judged@k of a model's
rankings, and the machine-annotator bias of a crowd-verified set (App. E.3). The math is in
annotator.analysis.labelsets; this module loads the sets and names things for people."""

from __future__ import annotations

from collections import defaultdict

from annotator.analysis.labelsets import (
    SetView,
    annotator_bias,
    annotator_contributions,
    judged_at_k,
    multiplicity,
    overlap,
    precision_recall,
    summary,
)
from annotator.campaigns.models.campaign import PairSource
from annotator.core.errors import ApplicationError
from annotator.labels.models.labelsets import LabelSet, LabelSetKind
from annotator.labels.selectors.labelsets import QUERY_TARGET_SIDES, dataset_pks, labelset_view
from annotator.ranking.models.ranking import Candidate

TABLE_DIRECTIONS = ("i2t", "t2i")
MAX_COMPARED = 8


def labelset_compare(
    *, label_sets: list[LabelSet], queries_of: LabelSet | None = None, baseline: LabelSet | None = None
) -> dict:
    """Every analysis of ECCV Caption Sec. 3.3 for the given sets (2 to 8, one dataset):

    - "multiplicity" (Table 3): per set, positive captions (i2t) and positive images (t2i) summed over
      the queries of `queries_of` (default: the first set), with the ratio to `baseline` (default: the
      first set of kind original among them, else the first set), and the histogram of positives per
      query (Figure 3a);
    - "precision_recall" (Table 2): for every ordered pair (candidate, reference), the candidate's
      precision and recall against the reference's positives over the queries both judged;
    - "overlap": for every pair, positives in both, only in one, and Jaccard, over the common queries.
    """
    if not 1 <= len(label_sets) <= MAX_COMPARED:
        raise ApplicationError(f"Compare 1 to {MAX_COMPARED} label sets.")
    if len({s.dataset_id for s in label_sets}) != 1 or (
        queries_of and queries_of.dataset_id != label_sets[0].dataset_id
    ):
        raise ApplicationError("Only sets on the same dataset can be compared.")
    queries_of = queries_of or label_sets[0]
    views = {s.pk: labelset_view(label_set=s) for s in label_sets}
    base_view = views.get(queries_of.pk) or labelset_view(label_set=queries_of)
    if baseline is not None and baseline.pk not in views:
        raise ApplicationError("The baseline must be one of the compared sets.")
    baseline = baseline or next((s for s in label_sets if s.kind == LabelSetKind.ORIGINAL), label_sets[0])
    multiplicity_rows = []
    for label_set in label_sets:
        row = {"label_set": label_set.label, "id": label_set.pk, "kind": label_set.kind}
        for direction in TABLE_DIRECTIONS:
            row[direction] = multiplicity(views[label_set.pk], direction, queries=base_view.queries[direction])
        multiplicity_rows.append(row)
    base_row = next(row for row in multiplicity_rows if row["id"] == baseline.pk)
    for row in multiplicity_rows:
        for direction in TABLE_DIRECTIONS:
            base = base_row[direction]["positives"]
            row[direction]["ratio"] = round(row[direction]["positives"] / base, 2) if base else None
    pairs = []
    for candidate in label_sets:
        for reference in label_sets:
            if candidate.pk == reference.pk:
                continue
            entry = {"candidate": candidate.label, "reference": reference.label}
            for direction in TABLE_DIRECTIONS:
                entry[direction] = precision_recall(views[candidate.pk], views[reference.pk], direction)
            pairs.append(entry)
    overlaps = []
    for i, first in enumerate(label_sets):
        for second in label_sets[i + 1 :]:
            entry = {"first": first.label, "second": second.label}
            for direction in TABLE_DIRECTIONS:
                entry[direction] = overlap(views[first.pk], views[second.pk], direction)
            overlaps.append(entry)
    return {
        "sets": [{"id": s.pk, "label": s.label, "kind": s.kind, "summary": summary(views[s.pk])} for s in label_sets],
        "queries_of": queries_of.label,
        "query_counts": {d: len(base_view.queries[d]) for d in TABLE_DIRECTIONS},
        "baseline": baseline.label,
        "multiplicity": multiplicity_rows,
        "precision_recall": pairs,
        "overlap": overlaps,
    }


def labelset_judged_at_k(*, label_set: LabelSet, rankings: dict, k: int = 10, view: SetView | None = None) -> dict:
    """judged@k of a model's rankings (source ids) per direction of the set, with the unjudged top-k
    pairs (source ids, best rank first) that a crowd campaign could judge."""
    if not 1 <= k <= 100:
        raise ApplicationError("k is between 1 and 100.")
    view = view or labelset_view(label_set=label_set)
    pks = dataset_pks(dataset_id=label_set.dataset_id)
    result = {}
    for direction in view.directions():
        query_side, target_side = QUERY_TARGET_SIDES[direction]
        as_pks = {}
        for query, items in rankings.get(direction, {}).items():
            query_pk = pks[query_side].get(query)
            if query_pk is not None:
                as_pks[query_pk] = [pks[target_side].get(item, -1) for item in items]
        outcome = judged_at_k(view, as_pks, direction, k=k)
        outcome["unjudged"] = [(q, t, rank) for q, t, rank in outcome["unjudged"] if t != -1]
        result[direction] = outcome
    return result


def _proposals(label_set: LabelSet) -> dict:
    """pair key -> {annotator name: best rank it proposed the pair at}, from the campaign's provenance."""
    proposals: dict[tuple, dict[str, int]] = defaultdict(dict)
    rows = PairSource.objects.filter(pair__campaign=label_set.campaign).values_list(
        "pair__kind",
        "pair__image_id",
        "pair__caption_id",
        "pair__other_image_id",
        "pair__other_caption_id",
        "run__annotator__name",
        "rank",
    )
    for kind, image, caption, other_image, other_caption, name, rank in rows.iterator(chunk_size=10_000):
        if kind == "image_caption":
            key = (kind, image, caption)
        elif kind == "caption_caption":
            key = (kind, caption, other_caption)
        else:
            key = (kind, image, other_image)
        sources = proposals[key]
        sources[name] = min(rank, sources.get(name, rank))
    return dict(proposals)


def _annotator_rankings(label_set: LabelSet, view: SetView) -> dict[str, dict]:
    """annotator name -> {direction: {query pk: [target pks best first]}} from the campaign's runs (the
    latest run of each annotator), for the set's queries."""
    runs = {}
    for run_id, name in label_set.campaign.runs.order_by("created_at", "pk").values_list("pk", "annotator__name"):
        runs[name] = run_id
    rankings: dict[str, dict] = {}
    for name, run_id in runs.items():
        per_direction: dict[str, dict] = {}
        rows = (
            Candidate.objects.filter(run_id=run_id, direction__in=view.directions())
            .order_by("direction", "query_id", "rank")
            .values_list("direction", "query_id", "target_id")
        )
        for direction, query, target in rows.iterator(chunk_size=10_000):
            if query in view.queries[direction]:
                per_direction.setdefault(direction, {}).setdefault(query, []).append(target)
        rankings[name] = per_direction
    return rankings


def labelset_bias(*, label_set: LabelSet, k: int = 5, metrics: tuple[str, ...] = ("r1", "r_precision")) -> dict:
    """The machine-annotator bias of a crowd-verified set (ECCV Caption App. E.3), from the provenance the
    campaign stored: per annotator its share of positives it alone proposed, precision of its top-k
    against the crowd, recall and leave-one-out recall; and the bias B per annotator subset, with
    self- and non-self-bias, scored with each annotator's own stored rankings."""
    if label_set.kind != LabelSetKind.CROWD:
        raise ApplicationError(
            "The annotator bias needs the provenance of a crowd-verified set (which annotator proposed which "
            "pair); this set is " + label_set.get_kind_display().lower() + ".",
            status=409,
        )
    if not 1 <= k <= 100:
        raise ApplicationError("k is between 1 and 100.")
    view = labelset_view(label_set=label_set)
    proposals = _proposals(label_set)
    contributions = annotator_contributions(proposals, view.pairs, k=k)
    rankings = {name: r for name, r in _annotator_rankings(label_set, view).items() if r}
    result = {
        "label_set": label_set.label,
        "k": k,
        "positives": sum(1 for key, positive in view.pairs.items() if positive and key in proposals),
        "annotators": contributions,
        "bias": None,
        "bias_note": "",
    }
    if len(rankings) < 2:
        result["bias_note"] = "The bias B compares annotators' rankings; this campaign has fewer than two."
        return result
    try:
        result["bias"] = annotator_bias(
            proposals=proposals, labels=view.pairs, queries=view.queries, rankings=rankings, metrics=metrics
        )
    except ValueError as error:
        result["bias_note"] = str(error)
    return result
