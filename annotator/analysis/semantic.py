"""Semantic Recall and the Normalized Cumulative Semantic score (Biten, Mafla et al., seed 002 Sec. 3.2-3.3).

A relevance matrix N holds N_ij = phi(G_i, c_j), a captioning metric (CIDEr here) of caption j against the
reference captions G_i of image i, for every image and caption of the test set. For a query (an image's row
for i2t, a caption's column for t2i) let G~(m) be its m most relevant targets by N, ties broken by the
gallery's order (the lower index first), and Q_k the first k targets the model retrieved. Then

    SR@k  = |G~(m) ∩ Q_k| / |G~(m)|                                (Eq. 4)
    NCS@k = sum_{j in G~(k) ∩ Q_k} N_qj / sum_{l in G~(k)} N_ql       (Eq. 5: the cut-off k is also m)

`m` is a number, or per query (by default the number of the query's original positives: 5 for a COCO
image, 1 for a caption, so the extended ground truth is as large as the dataset's own). A query whose k
most relevant targets all score 0 has no NCS (0/0) and is left out of NCS@k. With `exclude` (the
paper's "N" variant) the given targets of a query (its ground-truth pairs) leave both its ranking and
G~. Targets of a ranking that N does not know count as retrieved non-relevant items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from annotator.analysis.retrieval import RECALL_KS, QueryTable, as_ids


def semantic_names(ks: Sequence[int] = RECALL_KS) -> list[str]:
    return [f"sr_r{k}" for k in ks] + [f"ncs{k}" for k in ks]


BLOCK_ELEMENTS = 4_000_000  # queries per block x targets: bounds the temporaries of the block top-k


def top_targets(row: np.ndarray, count: int) -> np.ndarray:
    """Indices of the `count` largest values, largest first, ties by lower index; deterministic."""
    indices, _ = top_targets_block(row[None, :], count)
    return indices[0]


def top_targets_block(block: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a (queries x targets) block, the `count` largest values and their indices, ordered by
    value descending and index ascending (so a prefix is the top-k of any smaller k). Vectorised: one
    partition finds each row's threshold, the ties at the threshold are taken lowest index first."""
    rows, width = block.shape
    count = min(count, width)
    if count <= 0:
        return np.zeros((rows, 0), dtype=np.int64), np.zeros((rows, 0))
    threshold = np.partition(block, width - count, axis=1)[:, width - count][:, None]
    chosen = block >= threshold
    crowded = np.flatnonzero(chosen.sum(axis=1) > count)  # rows with more ties at the threshold than room
    if len(crowded):
        sub = block[crowded]
        above = sub > threshold[crowded]
        tied = sub == threshold[crowded]
        need = count - above.sum(axis=1, keepdims=True)
        chosen[crowded] = above | (tied & (np.cumsum(tied, axis=1) <= need))
    columns = np.nonzero(chosen)[1].reshape(rows, count)  # ascending index within each row
    values = np.take_along_axis(block, columns, axis=1)
    order = np.argsort(-values, axis=1, kind="stable")
    return np.take_along_axis(columns, order, axis=1), np.take_along_axis(values, order, axis=1)


def semantic_table(
    rankings: Mapping,
    relevance: np.ndarray,
    query_index: Mapping[str, int],
    target_index: Mapping[str, int],
    *,
    m: int | Mapping[str, int],
    ks: Sequence[int] = RECALL_KS,
    exclude: Mapping[str, set[str]] | None = None,
) -> QueryTable:
    """Per-query SR@k and NCS@k. `relevance` is queries x targets (N for i2t, N.T for t2i); the index
    maps give each query id its row and each target id its column. Every query of `query_index` counts.

    Queries go in blocks: each block's rows are gathered once (contiguous, whatever the layout of
    `relevance`) and its top targets found for all rows at once."""
    ranked_by_query = {str(query): as_ids(ranked) for query, ranked in rankings.items()}
    columns = semantic_names(ks)
    depth = max(ks)
    widths = {query: (m if isinstance(m, int) else m.get(query, 0)) for query in query_index}
    count = max([depth, *widths.values()])
    items = list(query_index.items())
    block_rows = max(1, BLOCK_ELEMENTS // max(1, relevance.shape[1]))
    queries, rows = [], []
    missing = 0
    for start in range(0, len(items), block_rows):
        chunk = items[start : start + block_rows]
        block = np.array(relevance[[row for _, row in chunk]], dtype=np.float64)
        for position, (query, _) in enumerate(chunk):
            excluded = exclude.get(query, set()) if exclude else set()
            if excluded:
                block[position, [target_index[t] for t in excluded if t in target_index]] = -np.inf
        best, scores = top_targets_block(block, count)
        for position, (query, _) in enumerate(chunk):
            ranked = ranked_by_query.get(query)
            if ranked is None:
                missing += 1
                ranked = []
            excluded = exclude.get(query, set()) if exclude else set()
            if excluded:
                ranked = [item for item in ranked if item not in excluded]
            retrieved = [target_index.get(item, -1) for item in ranked[:depth]]
            finite = np.isfinite(scores[position])
            order, value = best[position][finite].tolist(), scores[position][finite].tolist()
            width = widths[query]
            extended = set(order[:width])
            values = []
            for k in ks:
                head = {index for index in retrieved[:k] if index >= 0}
                values.append(len(extended & head) / len(extended) if extended else np.nan)
            for k in ks:
                head = {index for index in retrieved[:k] if index >= 0}
                denominator = float(sum(value[:k]))
                numerator = float(sum(v for index, v in zip(order[:k], value[:k], strict=True) if index in head))
                values.append(numerator / denominator if denominator > 0 else np.nan)
            queries.append(query)
            rows.append(values)
    return QueryTable(
        queries=queries,
        columns=columns,
        values=np.asarray(rows, dtype=np.float64).reshape(len(rows), len(columns)),
        counts={"queries": len(queries), "missing_rankings": missing},
    )
