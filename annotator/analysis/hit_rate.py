"""Hit rate of a ranking against a known truth: the share of queries with a true match in the top k."""

from __future__ import annotations


def hit_rates(*, ranked: dict, truth: dict, ks: tuple[int, ...] = (1, 5, 10)) -> dict:
    """ranked: query -> targets best first; truth: query -> set of true targets.

    Every query of `truth` with at least one true target counts (a query the ranking left out is a miss).
    Returns {"queries": n, "top1": share, "top5": share, ...}.
    """
    queries = [query for query, targets in truth.items() if targets]
    result: dict = {"queries": len(queries)}
    for k in ks:
        hits = sum(1 for query in queries if set(ranked.get(query, [])[:k]) & set(truth[query]))
        result[f"top{k}"] = hits / len(queries) if queries else 0.0
    return result


def intra_modal_truth(*, t2i: dict, i2t: dict) -> dict:
    """Caption-caption and image-image truth from the exact caption-image truth: two images are related when
    a caption describes both, two captions when they describe a common image (never an item and itself)."""
    i2i = {image: set() for image in i2t}
    for described in t2i.values():
        for image in described:
            i2i.setdefault(image, set()).update(described - {image})
    t2t = {caption: set() for caption in t2i}
    for describing in i2t.values():
        for caption in describing:
            t2t.setdefault(caption, set()).update(describing - {caption})
    return {"i2i": i2i, "t2t": t2t}
