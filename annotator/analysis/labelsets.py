"""Label sets as plain data: set algebra, ECCV Caption's dataset analyses and the machine-annotator bias.

No ORM here. A set is a `SetView`: the queries it judged per direction, and its explicitly judged pairs
with a positive/negative flag. Ids are whatever the caller uses (primary keys, source ids), as long as one
view uses one kind.

Pairs are keyed `(kind, first, second)`: ("image_caption", image, caption), ("caption_caption", caption,
other caption), ("image_image", image, other image). A pair answers for every direction whose query is one
of its sides: an image-caption pair is the image's i2t target and the caption's t2i target; a
caption-caption or image-image pair is symmetric (each side is the other's target).

Judged vs. unknown: the targets of a judged query that the set lists as positive are its positives; every
other target of a judged query is a negative when a model is scored (ECCV Caption's convention). A query
the set did not judge is unknown: it is not scored and its pairs say nothing.

The analyses follow ECCV Caption (Chun et al.): Table 2 (precision and recall of one set against another),
Table 3 (positives per query), and App. E.3 (the bias B_Theta a choice of machine annotators puts into a
crowd-verified set).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from annotator.analysis.metrics import evaluate_direction

IMAGE_CAPTION, CAPTION_CAPTION, IMAGE_IMAGE = "image_caption", "caption_caption", "image_image"
DIRECTIONS = ("i2t", "t2i", "t2t", "i2i")
KIND_OF_DIRECTION = {"i2t": IMAGE_CAPTION, "t2i": IMAGE_CAPTION, "t2t": CAPTION_CAPTION, "i2i": IMAGE_IMAGE}
DIRECTIONS_OF_KIND = {IMAGE_CAPTION: ("i2t", "t2i"), CAPTION_CAPTION: ("t2t",), IMAGE_IMAGE: ("i2i",)}
UNION, INTERSECTION, DIFFERENCE = "union", "intersection", "difference"
DEFAULT_QUERY_RULE = {UNION: "all", INTERSECTION: "common", DIFFERENCE: "first"}

PairKey = tuple[str, int, int]


@dataclass
class SetView:
    """One label set in memory: judged queries per direction, judged pairs with their positive flag."""

    queries: dict[str, set] = field(default_factory=lambda: {d: set() for d in DIRECTIONS})
    pairs: dict[PairKey, bool] = field(default_factory=dict)

    def __post_init__(self):
        for direction in DIRECTIONS:
            self.queries.setdefault(direction, set())

    def directions(self) -> list[str]:
        """Directions with at least one judged query, in the usual order."""
        return [d for d in DIRECTIONS if self.queries[d]]


def pair_ends(key: PairKey, direction: str) -> list[tuple]:
    """(query, target) of `key` in `direction`; two for a symmetric pair, none when the kind does not fit."""
    kind, first, second = key
    if kind != KIND_OF_DIRECTION[direction]:
        return []
    if direction == "i2t":
        return [(first, second)]
    if direction == "t2i":
        return [(second, first)]
    return [(first, second), (second, first)] if first != second else [(first, second)]


def positives_map(view: SetView, direction: str) -> dict:
    """{judged query: set of positive targets}; judged queries without positives map to an empty set."""
    result = {query: set() for query in view.queries[direction]}
    for key, positive in view.pairs.items():
        if not positive:
            continue
        for query, target in pair_ends(key, direction):
            if query in result:
                result[query].add(target)
    return result


def negatives_map(view: SetView, direction: str) -> dict:
    """{judged query: set of its targets the set judged not positive} for the judged queries that have any."""
    result: dict = {}
    for key, positive in view.pairs.items():
        if positive:
            continue
        for query, target in pair_ends(key, direction):
            if query in view.queries[direction]:
                result.setdefault(query, set()).add(target)
    return result


def judged_map(view: SetView, direction: str) -> dict:
    """{judged query: targets the set holds an explicit label for, positive or negative}."""
    result = {query: set() for query in view.queries[direction]}
    for key in view.pairs:
        for query, target in pair_ends(key, direction):
            if query in result:
                result[query].add(target)
    return result


def touches_queries(key: PairKey, queries: Mapping[str, set]) -> bool:
    """True when one side of the pair is a judged query of a direction the pair answers for."""
    return any(query in queries[d] for d in DIRECTIONS_OF_KIND[key[0]] for query, _ in pair_ends(key, d))


# ------------------------------------------------------------------------------------------- algebra


def _opinion(view: SetView, key: PairKey) -> bool | None:
    """What `view` says of a pair: True/False when it labels it or judged one of its queries, else None."""
    if key in view.pairs:
        return view.pairs[key]
    if any(query in view.queries[d] for d in DIRECTIONS_OF_KIND[key[0]] for query, _ in pair_ends(key, d)):
        return False  # a judged query's unlisted target is a negative
    return None


def combine(views: Sequence[SetView], *, operation: str, query_rule: str | None = None) -> SetView:
    """A derived set.

    Queries: `query_rule` "all" (judged by any operand), "common" (by every operand) or "first" (the
    first operand's); the default is all for a union, common for an intersection, first for a difference.
    Pairs: every pair an operand labels, kept when it touches a query of the result. A pair is positive
    - union: when any operand says positive;
    - intersection: when every operand that has an opinion says positive (an operand has an opinion on a
      pair it labels, or whose query it judged: an unlisted target of a judged query is a negative);
    - difference: when the first operand says positive and no other operand does.
    The result of a union of "crowd, CxC, original" with query_rule "first" is ECCV Caption's recipe.
    """
    if len(views) < 2:
        raise ValueError("A derived set needs at least two sets.")
    if operation not in DEFAULT_QUERY_RULE:
        raise ValueError(f"Unknown operation {operation!r}.")
    query_rule = query_rule or DEFAULT_QUERY_RULE[operation]
    queries: dict[str, set] = {}
    for direction in DIRECTIONS:
        sets = [view.queries[direction] for view in views]
        if query_rule == "all":
            queries[direction] = set().union(*sets)
        elif query_rule == "common":
            queries[direction] = set.intersection(*map(set, sets))
        elif query_rule == "first":
            queries[direction] = set(sets[0])
        else:
            raise ValueError(f"Unknown query rule {query_rule!r}.")
    keys = set().union(*(view.pairs for view in views))
    pairs: dict[PairKey, bool] = {}
    for key in keys:
        if not touches_queries(key, queries):
            continue
        opinions = [_opinion(view, key) for view in views]
        if operation == UNION:
            positive = any(opinions)
        elif operation == INTERSECTION:
            said = [o for o in opinions if o is not None]
            positive = bool(said) and all(said)
        else:
            positive = bool(opinions[0]) and not any(opinions[1:])
        pairs[key] = positive
    return SetView(queries=queries, pairs=pairs)


# ------------------------------------------------------------------------------------------- analyses


def summary(view: SetView) -> dict:
    """Per direction: judged queries, queries with a positive, positives, explicitly judged targets; and the
    number of pairs (positive and all)."""
    result = {"pairs": len(view.pairs), "positive_pairs": sum(1 for p in view.pairs.values() if p)}
    for direction in view.directions():
        positives = positives_map(view, direction)
        judged = judged_map(view, direction)
        result[direction] = {
            "queries": len(positives),
            "queries_with_positives": sum(1 for targets in positives.values() if targets),
            "positives": sum(len(targets) for targets in positives.values()),
            "judged": sum(len(targets) for targets in judged.values()),
        }
    return result


def multiplicity(view: SetView, direction: str, *, queries: Iterable | None = None) -> dict:
    """ECCV Caption Table 3 for one set and direction: positives over `queries` (default: the set's own).

    `positives` is the total (Table 3's "# positive captions" for i2t, "# positive images" for t2i);
    `queries_judged` counts the given queries this set judged (the others contribute nothing: unknown);
    `histogram` maps a number of positives to how many of those queries have it (Figure 3a).
    """
    positives = positives_map(view, direction)
    wanted = list(positives) if queries is None else list(queries)
    counts = [len(positives[q]) for q in wanted if q in positives]
    return {
        "queries": len(wanted),
        "queries_judged": len(counts),
        "positives": sum(counts),
        "mean": (sum(counts) / len(counts)) if counts else None,
        "max": max(counts) if counts else 0,
        "histogram": dict(sorted(Counter(counts).items())),
    }


def precision_recall(candidate: SetView, reference: SetView, direction: str) -> dict:
    """ECCV Caption Table 2: how well `candidate`'s positives agree with `reference`'s (the "truth").

    Over the queries both sets judged, with r_i the candidate's positives and t_i the reference's:
    Prec = mean |r_i & t_i| / |r_i| over queries with r_i non-empty; Recall = mean (1 - |t_i - r_i| / |t_i|)
    over queries with t_i non-empty. None where no query qualifies.
    """
    mine, truth = positives_map(candidate, direction), positives_map(reference, direction)
    common = [q for q in truth if q in mine]
    precisions = [len(mine[q] & truth[q]) / len(mine[q]) for q in common if mine[q]]
    recalls = [1 - len(truth[q] - mine[q]) / len(truth[q]) for q in common if truth[q]]
    return {
        "queries": len(common),
        "precision": (sum(precisions) / len(precisions)) if precisions else None,
        "recall": (sum(recalls) / len(recalls)) if recalls else None,
        "precision_queries": len(precisions),
        "recall_queries": len(recalls),
    }


def overlap(first: SetView, second: SetView, direction: str) -> dict:
    """Positives of the queries both judged: in both, only in the first, only in the second, and Jaccard."""
    a, b = positives_map(first, direction), positives_map(second, direction)
    common = [q for q in a if q in b]
    both = only_first = only_second = 0
    for query in common:
        both += len(a[query] & b[query])
        only_first += len(a[query] - b[query])
        only_second += len(b[query] - a[query])
    union = both + only_first + only_second
    return {
        "queries": len(common),
        "both": both,
        "only_first": only_first,
        "only_second": only_second,
        "jaccard": (both / union) if union else None,
    }


def judged_at_k(view: SetView, rankings: Mapping, direction: str, *, k: int) -> dict:
    """How much of a model's top k the set has labelled: per query, labelled items among the first k
    (distinct) over how many there are, averaged over the set's queries the rankings cover.

    Also the unlabelled (query, target) pairs of those top-k lists, best rank first per query: what a
    crowd campaign would have to judge to close the gap.
    """
    judged = judged_map(view, direction)
    fractions, unjudged, covered = [], [], 0
    for query, labelled in judged.items():
        ranked = rankings.get(query)
        if ranked is None:
            continue
        covered += 1
        top = list(dict.fromkeys(ranked[:k]))
        if not top:
            continue
        fractions.append(sum(1 for item in top if item in labelled) / len(top))
        unjudged.extend((query, item, rank) for rank, item in enumerate(top, start=1) if item not in labelled)
    return {
        "k": k,
        "queries": len(judged),
        "queries_ranked": covered,
        "judged_at_k": (sum(fractions) / len(fractions)) if fractions else None,
        "unjudged_pairs": len(unjudged),
        "unjudged": unjudged,
    }


# ------------------------------------------------------------------------------------------- bias (App. E.3)


def annotator_contributions(
    proposals: Mapping[PairKey, Mapping[str, int]], labels: Mapping[PairKey, bool], *, k: int
) -> dict[str, dict]:
    """Per machine annotator, from the provenance of a crowd-verified set.

    `proposals`: pair -> {annotator: best rank it gave the pair}; `labels`: pair -> verified positive.
    - proposed / judged / positives: its pairs, those the crowd labelled, those verified positive;
    - alone: verified positives no other annotator proposed, and `alone_share` = alone / all positives;
    - precision_at_k: verified positives among its labelled proposals at rank <= k;
    - recall: its verified positives / all verified positives (what it found of what the crowd accepted);
    - loo_recall: the share of all verified positives still found when it is left out (1 - alone_share):
      the recall a set built without it would keep.
    """
    annotators = sorted({name for sources in proposals.values() for name in sources})
    all_positive = [key for key, positive in labels.items() if positive and key in proposals]
    total = len(all_positive)
    result = {}
    for name in annotators:
        mine = [key for key, sources in proposals.items() if name in sources]
        judged = [key for key in mine if key in labels]
        positives = [key for key in judged if labels[key]]
        alone = [key for key in positives if set(proposals[key]) == {name}]
        top = [key for key in judged if proposals[key][name] <= k]
        top_positive = sum(1 for key in top if labels[key])
        result[name] = {
            "proposed": len(mine),
            "judged": len(judged),
            "positives": len(positives),
            "alone": len(alone),
            "alone_share": (len(alone) / total) if total else None,
            "precision_at_k": (top_positive / len(top)) if top else None,
            "recall": (len(positives) / total) if total else None,
            "loo_recall": ((total - len(alone)) / total) if total else None,
        }
    return result


def positives_of_subset(
    proposals: Mapping[PairKey, Mapping[str, int]], labels: Mapping[PairKey, bool], subset: Iterable[str]
) -> dict[PairKey, bool]:
    """The verified positives a crowd would have seen had only `subset` proposed candidates (E.3's
    per-model versions of the dataset): positives proposed by at least one annotator of the subset."""
    chosen = set(subset)
    return {key: True for key, positive in labels.items() if positive and chosen & set(proposals.get(key, ()))}


def model_scores(
    rankings: Mapping[str, Mapping], positives: Mapping[str, Mapping], *, metrics: Sequence[str]
) -> dict[str, float | None]:
    """Scores of one model's rankings ({direction: {query: [targets]}}) against positive maps
    ({direction: {query: targets}}), averaged over directions with scored queries."""
    totals: dict[str, list[float]] = {name: [] for name in metrics}
    for direction, labels in positives.items():
        scores, counts = evaluate_direction(rankings.get(direction, {}), labels, metrics=metrics)
        if counts["queries"]:
            for name in metrics:
                totals[name].append(scores[name])
    return {name: _mean(values) for name, values in totals.items()}


def annotator_bias(
    *,
    proposals: Mapping[PairKey, Mapping[str, int]],
    labels: Mapping[PairKey, bool],
    queries: Mapping[str, set],
    rankings: Mapping[str, Mapping[str, Mapping]],
    metrics: Sequence[str] = ("r1", "r_precision"),
    max_annotators: int = 6,
) -> dict:
    """ECCV Caption App. E.3: the bias B_Theta that proposing candidates with the annotators Theta puts
    into a crowd-verified set.

    s_Theta(phi) is model phi's score (its own rankings) on the set built from Theta's proposals alone;
    s_All(phi) the score on the whole set. B_Theta = mean over phi in All of |s_Theta(phi) - s_All(phi)|;
    self-bias averages over phi in Theta, non-self-bias over phi not in Theta (E.5, E.6). Every non-empty
    proper subset Theta of the annotators with rankings is measured (at most `max_annotators` of them:
    2^n - 2 subsets), and the means per subset size (Figure E.2).

    `rankings`: annotator -> {direction: {query: [targets best first]}}; `queries`: the set's judged
    queries per direction. Returns {"annotators", "scores": {subset label: {model: {metric: score}}},
    "subsets": [{"annotators", "size", metric: {"bias", "self", "non_self"}}], "by_size": {...}}.
    """
    names = sorted(rankings)
    if len(names) < 2:
        raise ValueError("The bias needs at least two annotators with rankings.")
    if len(names) > max_annotators:
        raise ValueError(f"The bias compares every subset of annotators; at most {max_annotators} of them.")

    def dataset_of(positive_pairs: Mapping[PairKey, bool]) -> dict[str, dict]:
        view = SetView(queries={d: set(queries.get(d, ())) for d in DIRECTIONS}, pairs=dict(positive_pairs))
        return {d: {q: t for q, t in positives_map(view, d).items() if t} for d in view.directions()}

    full = dataset_of({key: True for key, positive in labels.items() if positive})
    all_scores = {name: model_scores(rankings[name], full, metrics=metrics) for name in names}
    scores = {"All": all_scores}
    subsets = []
    for size in range(1, len(names)):
        for subset in itertools.combinations(names, size):
            data = dataset_of(positives_of_subset(proposals, labels, subset))
            subset_scores = {name: model_scores(rankings[name], data, metrics=metrics) for name in names}
            label = "+".join(subset)
            scores[label] = subset_scores
            entry = {"annotators": list(subset), "size": size}
            for metric in metrics:
                gaps = {
                    name: abs(subset_scores[name][metric] - all_scores[name][metric])
                    for name in names
                    if subset_scores[name][metric] is not None and all_scores[name][metric] is not None
                }
                inside = [gap for name, gap in gaps.items() if name in subset]
                outside = [gap for name, gap in gaps.items() if name not in subset]
                entry[metric] = {
                    "bias": (sum(gaps.values()) / len(gaps)) if gaps else None,
                    "self": (sum(inside) / len(inside)) if inside else None,
                    "non_self": (sum(outside) / len(outside)) if outside else None,
                }
            subsets.append(entry)
    by_size = {}
    for size in range(1, len(names)):
        of_size = [entry for entry in subsets if entry["size"] == size]
        by_size[size] = {
            metric: {
                part: _mean([entry[metric][part] for entry in of_size if entry[metric][part] is not None])
                for part in ("bias", "self", "non_self")
            }
            for metric in metrics
        }
    return {"annotators": names, "metrics": list(metrics), "scores": scores, "subsets": subsets, "by_size": by_size}


def _mean(values: list[float]) -> float | None:
    return (sum(values) / len(values)) if values else None
