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
