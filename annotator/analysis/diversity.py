"""Diversity between machine annotators, as in ECCV Caption Table A.1 (pure numpy).

Two measures over the queries both annotators ranked, from each one's top-k list (k = 25 in the paper):

1. Kendall's tau-b between two partially overlapping top-k lists. The items compared are the union U of
   the two lists. An item's rank in a list is its 1-based position there, or k + 1 when the list does not
   hold it (every missing item shares that one "beyond the list" rank, Fagin et al.'s placeholder ranks
   for comparing top-k lists). Over all pairs (u, v) of U, with sx = sign(rank_a(u) - rank_a(v)) and
   sy likewise for list b,
        tau_b = sum(sx * sy) / sqrt(sum(|sx|) * sum(|sy|)),
   i.e. (concordant - discordant) / sqrt((n0 - n1)(n0 - n2)), the tau-b variant the paper names, which
   accounts for the ties the placeholder rank creates. Identical lists give 1; two disjoint lists give
   about -0.68 for k = 25 (each list ranks its own items above all of the other's). A query whose tau is undefined
   (|U| < 2, or one side all tied) is left out of the mean. The matrix is symmetric.
2. The average rank of annotator i's top-1 item in annotator j's list: its 1-based position, or k + 1
   when j did not retrieve it in its top k (the share of queries where j has it is reported too).
   Row i, column j; not symmetric.
"""

from __future__ import annotations

import numpy as np

BATCH = 512


def _rank_arrays(
    lists_a: list[list[int]], lists_b: list[list[int]], k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query, the ranks of the union's items in a and in b, padded to 2k (mask marks real items)."""
    width = 2 * k
    ranks_a = np.zeros((len(lists_a), width), dtype=np.float64)
    ranks_b = np.zeros((len(lists_a), width), dtype=np.float64)
    mask = np.zeros((len(lists_a), width), dtype=bool)
    for row, (a, b) in enumerate(zip(lists_a, lists_b, strict=False)):
        a, b = list(a)[:k], list(b)[:k]
        position_a = {item: index + 1 for index, item in enumerate(a)}
        position_b = {item: index + 1 for index, item in enumerate(b)}
        union = a + [item for item in b if item not in position_a]
        n = len(union)
        ranks_a[row, :n] = [position_a.get(item, k + 1) for item in union]
        ranks_b[row, :n] = [position_b.get(item, k + 1) for item in union]
        mask[row, :n] = True
    return ranks_a, ranks_b, mask


def kendall_tau_topk(lists_a: list[list[int]], lists_b: list[list[int]], *, k: int = 25) -> np.ndarray:
    """Kendall's tau-b per query between two top-k lists (definition in the module docstring); NaN if undefined."""
    out = np.full(len(lists_a), np.nan)
    for start in range(0, len(lists_a), BATCH):
        ranks_a, ranks_b, mask = _rank_arrays(lists_a[start : start + BATCH], lists_b[start : start + BATCH], k)
        sx = np.sign(ranks_a[:, :, None] - ranks_a[:, None, :])
        sy = np.sign(ranks_b[:, :, None] - ranks_b[:, None, :])
        pairs = mask[:, :, None] & mask[:, None, :]
        # Each unordered pair appears twice with the same sign product: the ratio is unchanged.
        num = (sx * sy * pairs).sum(axis=(1, 2))
        den = np.sqrt(np.abs(sx * pairs).sum(axis=(1, 2)) * np.abs(sy * pairs).sum(axis=(1, 2)))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + BATCH] = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return out


def top1_rank(lists_a: list[list[int]], lists_b: list[list[int]], *, k: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the rank of a's top-1 item in b (k + 1 when absent), and whether b has it at all."""
    ranks = np.full(len(lists_a), float(k + 1))
    found = np.zeros(len(lists_a), dtype=bool)
    for row, (a, b) in enumerate(zip(lists_a, lists_b, strict=False)):
        if not a:
            ranks[row] = np.nan
            continue
        b = list(b)[:k]
        if a[0] in b:
            ranks[row] = b.index(a[0]) + 1
            found[row] = True
    return ranks, found


def diversity_matrices(per_annotator: list[list[list[int]]], *, k: int = 25) -> dict:
    """Pairwise matrices over annotators; per_annotator[i][q] is annotator i's list for query q (same q order).

    Returns {"tau": m x m mean tau-b (None on the diagonal), "avg_rank": mean rank of row's top-1 in
    column's list, "found": share of queries where column has row's top-1, "queries": number of queries}.
    """
    m = len(per_annotator)
    tau = [[None] * m for _ in range(m)]
    avg_rank = [[None] * m for _ in range(m)]
    found = [[None] * m for _ in range(m)]
    for i in range(m):
        for j in range(m):
            if i == j:
                continue
            if j > i:
                values = kendall_tau_topk(per_annotator[i], per_annotator[j], k=k)
                mean = float(np.nanmean(values)) if np.isfinite(values).any() else None
                tau[i][j] = tau[j][i] = mean
            ranks, has = top1_rank(per_annotator[i], per_annotator[j], k=k)
            valid = np.isfinite(ranks)
            avg_rank[i][j] = float(ranks[valid].mean()) if valid.any() else None
            found[i][j] = float(has[valid].mean()) if valid.any() else None
    queries = len(per_annotator[0]) if per_annotator else 0
    return {"tau": tau, "avg_rank": avg_rank, "found": found, "queries": queries}
