"""Every retrieval metric of the seed papers, as per-query values over (ranking, judged positives). No ORM.

Inputs, for one direction (i2t, t2i, t2t or i2i):
- rankings: `{query id: [target ids, best first]}`;
- judgements: `{query id: {positive target id: grade}}`, grade 1.0 for a plain positive ("100% YES"),
  0.5 for "Partially YES" (ECCV Caption App. E.3, Eq. E.4). A plain label map `{query: [positives]}` is
  the same with every grade 1.0 (`as_grades`).
Ids are compared as strings. The queries are the judgements' keys; a query without positives is skipped,
a query without a ranking scores its positions as misses (counted as `missing_rankings`).

A `QueryTable` holds one value per query and metric, so a dataset score is a column's mean (or median)
and a bootstrap can resample queries (annotator.analysis.uncertainty). Metrics, per query with positives G
(R = |G|) and ranking T (Q_k = the first k items of T):

- `r{k}`: R@k as retrieval papers report it (R^V of seed 002 Eq. 2): 1 if Q_k holds any positive.
- `ir_r{k}`: recall as information retrieval defines it (seed 002 Eq. 1): |G ∩ Q_k| / |G|.
- `r_precision`, `map_at_r`: ECCV Caption's (annotator.analysis.metrics, equal to `eccv_caption`).
- `graded_r1`, `graded_r_precision`: ECCV Caption App. E.3 with m_i = the grade of the i-th item (0 for a
  non-positive): m_1, and (1/R) sum_{i<=R} m_i. Repeats in T are dropped first, so an item counts once.
- `rank`: the position of the first positive (1-based, repeats dropped); its median and mean over the
  queries are `median_rank` and `mean_rank`. A ranking without any positive puts it just past its end
  (len + 1) and counts the query as `past_end`: with truncated rankings both are lower bounds.

Protocols over other positives live here too: the COCO 5-fold "1K" test (`fold_table`), Plausible Match
R-Precision from instance classes (`pmrp_table`, ECCV Caption Sec. 2.1 / 4.1 after Chun et al.), and
semantic recall and NCS from a relevance matrix (annotator.analysis.semantic).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from annotator.analysis.metrics import precision_at, query_scores

RECALL_KS = (1, 5, 10)
# A `rank` column (or `<prefix>rank`) is reported as its median and its mean over the queries.
RANK_STATISTICS = (("median_rank", "median"), ("mean_rank", "mean"))


def derived(name: str) -> tuple[str, str]:
    """(source column, statistic) of a reported metric: `coco5k_median_rank` -> ("coco5k_rank", "median")."""
    for suffix, kind in RANK_STATISTICS:
        if name.endswith(suffix):
            return name[: -len(suffix)] + "rank", kind
    return name, "mean"


def recall_names(ks: Sequence[int] = RECALL_KS) -> list[str]:
    return [f"r{k}" for k in ks] + [f"ir_r{k}" for k in ks]


@dataclass
class QueryTable:
    """Per-query values of one direction: rows are queries, columns metrics (NaN: undefined for the query)."""

    queries: list[str]
    columns: list[str]
    values: np.ndarray  # len(queries) x len(columns), float64
    counts: dict = field(default_factory=dict)

    def column(self, name: str) -> np.ndarray:
        return self.values[:, self.columns.index(name)]

    def metric_names(self) -> list[str]:
        """Reported metrics: every plain column, with `rank` replaced by its median and mean."""
        names = []
        for column in self.columns:
            if column.endswith("rank"):
                names += [column[: -len("rank")] + suffix for suffix, _ in RANK_STATISTICS]
            else:
                names.append(column)
        return names

    def summary(self) -> dict[str, float | None]:
        """The dataset score of every metric (None when no query defines it)."""
        return {name: statistic(self, name) for name in self.metric_names()}


def statistic(table: QueryTable, name: str, weights: np.ndarray | None = None) -> float | None:
    """Mean (or median) of a metric over the queries; `weights` are how often each query is drawn."""
    source, kind = derived(name)
    values = table.column(source)
    defined = ~np.isnan(values)
    w = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w * defined
    if w.sum() == 0:
        return None
    if kind == "mean":
        return float(np.dot(w, np.where(defined, values, 0.0)) / w.sum())
    order = np.argsort(np.where(defined, values, np.inf), kind="stable")
    return weighted_median(values[order], w[order])


def weighted_median(sorted_values: np.ndarray, weights: np.ndarray) -> float:
    """The median of the multiset holding sorted_values[i] weights[i] times (whole weights), as np.median."""
    cumulative = np.cumsum(weights)
    total = int(round(cumulative[-1]))
    low = int(np.searchsorted(cumulative, (total + 1) // 2 - 0.5))
    high = int(np.searchsorted(cumulative, total // 2 + 1 - 0.5))
    return float((sorted_values[low] + sorted_values[high]) / 2)


def as_ids(ranked: Iterable) -> list[str]:
    return [str(item) for item in ranked]


def as_grades(labels: Mapping) -> dict[str, dict[str, float]]:
    """`{query: [positives]}` or `{query: {positive: grade}}` -> `{query: {positive: grade}}`, ids as strings."""
    result: dict[str, dict[str, float]] = {}
    for query, positives in labels.items():
        if isinstance(positives, Mapping):
            result[str(query)] = {str(target): float(grade) for target, grade in positives.items() if grade > 0}
        else:
            result[str(query)] = {str(target): 1.0 for target in positives}
    return result


def distinct(ranked: Sequence[str]) -> list[str]:
    """The ranking with repeats dropped (first occurrence kept)."""
    seen: set[str] = set()
    kept = []
    for item in ranked:
        if item not in seen:
            seen.add(item)
            kept.append(item)
    return kept


def query_metrics(ranked: Sequence[str], grades: Mapping[str, float], *, ks: Sequence[int] = RECALL_KS) -> dict:
    """Every per-query metric of one ranked list against its graded positives (grades > 0, non-empty)."""
    positives = set(grades)
    if not positives:
        raise ValueError("A query without positives cannot be scored.")
    r = len(positives)
    eccv = query_scores(ranked, positives)  # R@1/5/10, R-Precision, mAP@R exactly as eccv_caption
    unique = distinct(ranked)
    values: dict[str, float] = {}
    for k in ks:
        head = ranked[:k]
        values[f"r{k}"] = eccv[f"r{k}"] if f"r{k}" in eccv else (1.0 if positives.intersection(head) else 0.0)
        values[f"ir_r{k}"] = len(positives.intersection(head)) / r
    values["r_precision"] = eccv["r_precision"]
    values["map_at_r"] = eccv["map_at_r"]
    values["graded_r1"] = grades.get(unique[0], 0.0) if unique else 0.0
    values["graded_r_precision"] = sum(grades.get(item, 0.0) for item in unique[:r]) / r
    values["rank"] = next((position for position, item in enumerate(unique, 1) if item in positives), len(unique) + 1)
    return values


def judged_table(
    rankings: Mapping, judgements: Mapping, *, ks: Sequence[int] = RECALL_KS, exclude_self: bool = False
) -> QueryTable:
    """Per-query values of every target metric over the judgements' queries.

    `exclude_self` drops the query from its own ranking (caption-to-caption and image-to-image retrieval,
    where a gallery holds the query itself); how many rankings held it is counted in "self_matches_dropped".
    """
    grades_by_query = as_grades(judgements)
    ranked_by_query = {str(query): as_ids(ranked) for query, ranked in rankings.items()}
    columns = [*recall_names(ks), "r_precision", "map_at_r", "graded_r1", "graded_r_precision", "rank"]
    queries, rows = [], []
    skipped = missing = past_end = dropped = 0
    for query, grades in grades_by_query.items():
        if exclude_self:
            grades = {target: grade for target, grade in grades.items() if target != query}
        if not grades:
            skipped += 1
            continue
        ranked = ranked_by_query.get(query)
        if ranked is None:
            missing += 1
            ranked = []
        if exclude_self and query in ranked:
            ranked = [item for item in ranked if item != query]
            dropped += 1
        values = query_metrics(ranked, grades, ks=ks)
        if values["rank"] > len(distinct(ranked)):
            past_end += 1
        queries.append(query)
        rows.append([values[column] for column in columns])
    return QueryTable(
        queries=queries,
        columns=columns,
        values=np.asarray(rows, dtype=np.float64).reshape(len(rows), len(columns)),
        counts={
            "queries": len(queries),
            "skipped_without_positives": skipped,
            "missing_rankings": missing,
            "past_end": past_end,
            **({"self_matches_dropped": dropped} if exclude_self else {}),
        },
    )


# COCO 1K: the 5-fold protocol --------------------------------------------------------------------------


def coco_folds(caption_images: Sequence[tuple[str, str]], folds: int = 5) -> list[tuple[set[str], set[str]]]:
    """Split a test set into `folds` parts of consecutive captions, as COCO 1K does with the 5K test set
    (eccv_caption: `coco_test_ids` in order, 5,000 captions per fold); a fold's images are its captions'
    images. Returns [(images, captions)] with ids as strings."""
    if folds < 1:
        raise ValueError("folds must be at least 1")
    size = len(caption_images) // folds
    result = []
    for index in range(folds):
        part = caption_images[index * size : (index + 1) * size]
        result.append(({str(image) for _, image in part}, {str(caption) for caption, _ in part}))
    return result


def fold_table(
    rankings: Mapping,
    labels: Mapping,
    folds: Sequence[tuple[set[str], set[str]]],
    *,
    direction: str,
    ks: Sequence[int] = RECALL_KS,
) -> QueryTable:
    """R@k within folds: each query of a fold is ranked against that fold's gallery only (its ranking with
    every item outside the fold removed). The score is the mean over folds of the fold means, as
    eccv_caption's `coco_1k_recalls`; with folds of equal size it is the mean of this table's rows.

    i2t queries are a fold's images over its captions; t2i the other way round. A truncated ranking is
    exact within the fold as long as the fold's first k items are in it (they are whenever the whole
    ranking's first k are).
    """
    if direction not in ("i2t", "t2i"):
        raise ValueError("The fold protocol is defined for i2t and t2i.")
    grades = as_grades(labels)
    ranked_by_query = {str(query): as_ids(ranked) for query, ranked in rankings.items()}
    columns = [f"r{k}" for k in ks]
    queries, rows, fold_of = [], [], []
    missing = 0
    for number, (images, captions) in enumerate(folds):
        fold_queries, gallery = (images, captions) if direction == "i2t" else (captions, images)
        for query in sorted(fold_queries):
            positives = grades.get(query)
            if not positives:
                continue
            ranked = ranked_by_query.get(query)
            if ranked is None:
                missing += 1
                ranked = []
            inside = [item for item in ranked if item in gallery]
            rows.append([1.0 if set(inside[:k]) & positives.keys() else 0.0 for k in ks])
            queries.append(query)
            fold_of.append(number)
    sizes = np.bincount(np.asarray(fold_of, dtype=np.int64), minlength=len(folds)) if fold_of else np.zeros(0)
    return QueryTable(
        queries=queries,
        columns=columns,
        values=np.asarray(rows, dtype=np.float64).reshape(len(rows), len(columns)),
        counts={"queries": len(queries), "missing_rankings": missing, "fold_sizes": [int(s) for s in sizes]},
    )


# PMRP: Plausible Match R-Precision from instance classes -----------------------------------------------


def _class_matrix(label_sets: Sequence[frozenset]) -> np.ndarray:
    classes = sorted({label for labels in label_sets for label in labels}, key=str)
    column = {label: index for index, label in enumerate(classes)}
    matrix = np.zeros((len(label_sets), max(1, len(classes))), dtype=np.int32)
    for row, labels in enumerate(label_sets):
        for label in labels:
            matrix[row, column[label]] = 1
    return matrix


def plausible_neighbours(image_classes: Mapping[str, Iterable], *, zeta: int = 0) -> dict[str, set[str]]:
    """For each image, the images whose class vectors differ from its own in at most `zeta` classes
    (Chun et al.'s plausible match; an image is its own neighbour). Computed over distinct class sets."""
    groups: dict[frozenset, list[str]] = {}
    for image, labels in image_classes.items():
        groups.setdefault(frozenset(labels), []).append(str(image))
    keys = list(groups)
    matrix = _class_matrix(keys)
    sizes = matrix.sum(axis=1)
    differ = sizes[:, None] + sizes[None, :] - 2 * (matrix @ matrix.T)  # |A xor B| for every pair of sets
    neighbours: dict[str, set[str]] = {}
    for row, key in enumerate(keys):
        close = {image for col in np.flatnonzero(differ[row] <= zeta) for image in groups[keys[col]]}
        for image in groups[key]:
            neighbours[image] = close
    return neighbours


def plausible_labels(
    image_classes: Mapping[str, Iterable], caption_image: Mapping[str, str], *, zeta: int = 0
) -> dict[str, dict[str, set[str]]]:
    """PM positives: i2t image -> captions of its plausible images; t2i caption -> its image's plausible
    images. Only images with known classes take part (as queries and as targets)."""
    neighbours = plausible_neighbours(image_classes, zeta=zeta)
    captions_of: dict[str, set[str]] = {}
    for caption, image in caption_image.items():
        if str(image) in neighbours:
            captions_of.setdefault(str(image), set()).add(str(caption))
    i2t = {
        image: {caption for other in close for caption in captions_of.get(other, ())}
        for image, close in neighbours.items()
    }
    t2i = {
        str(caption): set(neighbours[str(image)])
        for caption, image in caption_image.items()
        if str(image) in neighbours
    }
    return {"i2t": i2t, "t2i": t2i}


def pmrp_table(
    rankings: Mapping, plausible: Mapping[int, Mapping[str, set[str]]], *, cap: int | None = 50
) -> QueryTable:
    """PMRP per query: R-Precision against the plausible matches, R = min(|PM|, cap).

    `plausible` is `{zeta: {query: PM targets}}`; a query's value is the mean over the zetas given (Chun et
    al. average zeta in {0, 1, 2}; ECCV Caption Sec. 4.1 reports zeta = 0 alone with R capped at 50).
    Queries are those every zeta's map holds.
    """
    maps = list(plausible.values())
    if not maps:
        raise ValueError("PMRP needs the plausible matches of at least one zeta.")
    ranked_by_query = {str(query): as_ids(ranked) for query, ranked in rankings.items()}
    candidates = sorted(set.intersection(*(set(pm) for pm in maps)))
    queries, rows = [], []
    missing = skipped = 0
    for query in candidates:
        ranked = ranked_by_query.get(query)
        scores = []
        for pm in maps:
            positives = pm[query]
            r = len(positives) if cap is None else min(len(positives), cap)
            if r:
                scores.append(precision_at(ranked or [], positives, r))
        if not scores:  # an image without captions has no plausible caption at all
            skipped += 1
            continue
        missing += ranked is None
        queries.append(query)
        rows.append([sum(scores) / len(scores)])
    return QueryTable(
        queries=queries,
        columns=["pmrp"],
        values=np.asarray(rows, dtype=np.float64).reshape(len(rows), 1),
        counts={"queries": len(queries), "missing_rankings": missing, "skipped_without_positives": skipped},
    )
