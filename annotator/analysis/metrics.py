"""Retrieval metrics of ECCV Caption (Sec. 4.1, App. E, and its released evaluation code). Pure Python.

A *label map* is `{query id: iterable of positive target ids}`, a *rankings map* is
`{query id: [target ids, best first]}`; ids are compared as strings, so a label file with integer ids and a
rankings file with string ids (JSON keys are always strings) agree.

Definitions, per query with positives G (R = |G|) and ranked list T:
- R@k = 1 if any of the first k items of T is in G, else 0.
- precision at a cut-off r = |distinct(T[:r]) & G| / |distinct(T[:r])|. Precision is taken over the
  *distinct* retrieved items, exactly as ECCV Caption's released `rprecision()`; a ranking that repeats an
  item therefore neither gains nor loses precision for the repeat.
- R-Precision = precision at R.
- mAP@R = (1/R) * sum_{r=1..R} [T[r-1] in G] * precision at r (a position whose item is not a positive
  contributes 0, as in the released `compute_eccv_metrics`).
The dataset score is the mean over the queries of the label map (its keys are the queries). A query with
no positives cannot be scored and is skipped; a query missing from the rankings, or a ranking shorter than
R, counts its missing positions as misses (the released code would raise instead).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

RECALL_KS = (1, 5, 10)
METRIC_NAMES = ("r1", "r5", "r10", "r_precision", "map_at_r")
DIRECTIONS = ("i2t", "t2i")


def precision_at(ranked: Sequence[str], positives: set[str], cutoff: int) -> float:
    """Precision of the first `cutoff` items over the distinct items among them (0 for an empty prefix)."""
    retrieved = set(ranked[:cutoff])
    if not retrieved:
        return 0.0
    return len(retrieved & positives) / len(retrieved)


def recall_at_k(ranked: Sequence[str], positives: set[str], k: int) -> float:
    """1.0 if any of the first k items is a positive, else 0.0."""
    return 1.0 if any(item in positives for item in ranked[:k]) else 0.0


def query_scores(ranked: Sequence[str], positives: set[str]) -> dict[str, float]:
    """R@1/5/10, R-Precision and mAP@R of one query (positives must be non-empty)."""
    r = len(positives)
    if r == 0:
        raise ValueError("A query without positives cannot be scored.")
    hits = 0.0
    for cutoff in range(1, r + 1):
        if cutoff <= len(ranked) and ranked[cutoff - 1] in positives:
            hits += precision_at(ranked, positives, cutoff)
    scores = {f"r{k}": recall_at_k(ranked, positives, k) for k in RECALL_KS}
    scores["r_precision"] = precision_at(ranked, positives, r)
    scores["map_at_r"] = hits / r
    return scores


def _as_id(value) -> str:
    return str(value)


def evaluate_direction(
    rankings: Mapping[str, Sequence], labels: Mapping[str, Iterable], *, metrics: Sequence[str] = METRIC_NAMES
) -> tuple[dict[str, float | None], dict[str, int]]:
    """Mean scores over the label map's queries, and counts (queries scored, skipped, missing rankings).

    Scores are None when no query could be scored.
    """
    ranked_by_query = {_as_id(query): [_as_id(item) for item in ranked] for query, ranked in rankings.items()}
    totals = dict.fromkeys(metrics, 0.0)
    scored = skipped = missing = 0
    for query, positives in labels.items():
        positive_set = {_as_id(item) for item in positives}
        if not positive_set:
            skipped += 1
            continue
        ranked = ranked_by_query.get(_as_id(query))
        if ranked is None:
            missing += 1
            ranked = []
        scores = query_scores(ranked, positive_set)
        for name in metrics:
            totals[name] += scores[name]
        scored += 1
    means = {name: (totals[name] / scored if scored else None) for name in metrics}
    return means, {"queries": scored, "skipped_without_positives": skipped, "missing_rankings": missing}


def evaluate(
    rankings: Mapping[str, Mapping], labels: Mapping[str, Mapping], *, metrics: Sequence[str] = METRIC_NAMES
) -> tuple[dict[str, dict], dict[str, dict]]:
    """Both directions: ({"i2t": scores, "t2i": scores}, {"i2t": counts, "t2i": counts})."""
    results, counts = {}, {}
    for direction in DIRECTIONS:
        results[direction], counts[direction] = evaluate_direction(
            rankings.get(direction, {}), labels.get(direction, {}), metrics=metrics
        )
    return results, counts


def parse_direction_file(
    data, *, what: str, directions: Sequence[str] = DIRECTIONS, negatives_allowed: bool = False
) -> dict[str, dict[str, list[str]]]:
    """Validate the shape of an ECCV-style file `{"i2t": {id: [ids]}, "t2i": {id: [ids]}}`; ids as strings.

    `directions` are the keys allowed (caption-to-caption "t2t" and image-to-image "i2i" where the caller
    scores them). Raises ValueError with a message that names the offending key. At least one direction
    must be present. With `negatives_allowed` (a label file in Vericap's ECCV JSON export form) a
    `"verified_negatives"` key is allowed and left out: they are not positives. A rankings file has none.
    """
    if not isinstance(data, dict):
        raise ValueError(f'The {what} must be a JSON object with "i2t" and/or "t2i".')
    expected = " and ".join(f'"{direction}"' for direction in directions)
    unknown = sorted(set(data) - set(directions) - ({"verified_negatives"} if negatives_allowed else set()))
    if unknown:
        raise ValueError(f"The {what} has unknown keys {unknown}; expected {expected}.")
    if not any(direction in data for direction in directions):
        raise ValueError(f"The {what} has none of {expected}.")
    parsed: dict[str, dict[str, list[str]]] = {}
    for direction in directions:
        if direction not in data and direction not in DIRECTIONS:
            continue
        section = data.get(direction, {})
        if not isinstance(section, dict):
            raise ValueError(f'"{direction}" in the {what} must map query ids to lists of ids.')
        parsed[direction] = {}
        for query, items in section.items():
            if not isinstance(items, list) or not all(
                isinstance(item, (str, int)) and not isinstance(item, bool) for item in items
            ):
                raise ValueError(f'"{direction}"["{query}"] in the {what} must be a list of ids (strings or integers).')
            parsed[direction][str(query)] = [str(item) for item in items]
    return parsed
