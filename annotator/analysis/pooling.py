"""Pooling machine annotators' candidates into unique pairs with provenance (numpy, no ORM).

ECCV Caption (Sec. 3.2): every annotator's top k per sampled query, the pools merged and duplicates
removed (64,850 proposals -> 46,424 unique pairs). A pair is identified by an int64 key built from its
two members: for image-caption pairs (image id, caption id) whichever direction proposed it, so an
i2t and a t2i proposal of the same pair are one pair; for caption-caption (STS) and image-image (SIS)
pairs the two ids in ascending order, so (x, y) and (y, x) are one pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DIRECTION_KIND = {
    "i2t": "image_caption",
    "t2i": "image_caption",
    "t2t": "caption_caption",
    "i2i": "image_image",
}
# Which id space a direction's queries and targets live in ("image" or "caption").
DIRECTION_SPACES = {
    "i2t": ("image", "caption"),
    "t2i": ("caption", "image"),
    "t2t": ("caption", "caption"),
    "i2i": ("image", "image"),
}
_SHIFT = np.int64(32)
_LOW = np.int64((1 << 32) - 1)


def pair_members(direction: str, query: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pair's (first, second) member ids: (image, caption) for image-caption pairs, (low, high) otherwise."""
    query = np.asarray(query, dtype=np.int64)
    target = np.asarray(target, dtype=np.int64)
    if direction == "i2t":
        return query, target
    if direction == "t2i":
        return target, query
    if direction in ("t2t", "i2i"):
        return np.minimum(query, target), np.maximum(query, target)
    raise ValueError(f"unknown direction {direction!r}")


def encode_keys(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """One int64 per pair; ids must fit in 32 bits (primary keys of one database)."""
    return (np.asarray(first, dtype=np.int64) << _SHIFT) | np.asarray(second, dtype=np.int64)


def decode_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = np.asarray(keys, dtype=np.int64)
    return keys >> _SHIFT, keys & _LOW


def query_keys(direction: str, query: np.ndarray, target: np.ndarray) -> np.ndarray:
    return encode_keys(*pair_members(direction, query, target))


def key_function(direction: str):
    """The scalar form of `query_keys`: a function of (query, target) ids to their pair's key (None for an id
    paired with itself in the symmetric directions)."""
    symmetric = direction in ("t2t", "i2i")

    def make_key(query: int, target: int) -> int | None:
        if direction == "i2t":
            return (query << 32) | target
        if direction == "t2i":
            return (target << 32) | query
        if symmetric:
            if query == target:
                return None
            low, high = (query, target) if query < target else (target, query)
            return (low << 32) | high
        raise ValueError(direction)

    return make_key


def key_query(direction: str, key: int) -> int:
    """The query of a pair's key in `direction`: the caption for t2i, the first member otherwise."""
    first, second = key >> 32, key & ((1 << 32) - 1)
    return second if direction == "t2i" else first


def sample_queries(
    query_ids: np.ndarray, *, count: int | None, fraction: float | None, rng: np.random.Generator
) -> np.ndarray:
    """The sampled queries, ascending. A count larger than the universe takes all of it."""
    universe = np.unique(np.asarray(query_ids, dtype=np.int64))
    n = len(universe)
    if count is not None:
        k = min(int(count), n)
    elif fraction is not None:
        k = min(n, int(round(float(fraction) * n)))
        if fraction > 0 and n:
            k = max(k, 1)
    else:
        return universe
    chosen = rng.choice(n, size=k, replace=False) if k else np.empty(0, dtype=np.int64)
    return np.sort(universe[chosen])


@dataclass
class CandidateRows:
    """Candidate rows of one direction as parallel arrays."""

    run: np.ndarray
    query: np.ndarray
    target: np.ndarray
    rank: np.ndarray
    score: np.ndarray

    @classmethod
    def from_rows(cls, rows) -> CandidateRows:
        """From (run_id, query_id, target_id, rank, score) tuples."""
        if len(rows) == 0:
            empty = np.empty(0, dtype=np.int64)
            return cls(empty, empty, empty, empty, np.empty(0, dtype=np.float64))
        table = np.array(rows, dtype=np.float64)  # ids are far below 2**53, so they survive the float
        ints = table[:, :4].astype(np.int64)
        return cls(ints[:, 0].copy(), ints[:, 1].copy(), ints[:, 2].copy(), ints[:, 3].copy(), table[:, 4].copy())

    def __len__(self) -> int:
        return len(self.run)

    def select(self, mask: np.ndarray) -> CandidateRows:
        return CandidateRows(self.run[mask], self.query[mask], self.target[mask], self.rank[mask], self.score[mask])


@dataclass
class Pool:
    """The unique pairs of one direction, in packing order, and where each came from.

    keys/first/second/query: one entry per unique pair, ordered by the (seeded) query order, then by the
    best rank at which any annotator proposed it. source_*: one entry per (pair, run), the run's best
    rank and its score there; source_pair indexes into keys.
    """

    direction: str
    keys: np.ndarray
    first: np.ndarray
    second: np.ndarray
    query: np.ndarray
    source_pair: np.ndarray
    source_run: np.ndarray
    source_rank: np.ndarray
    source_score: np.ndarray
    proposals: int  # candidate rows pooled (before duplicates are removed)

    def __len__(self) -> int:
        return len(self.keys)


def pool_candidates(rows: CandidateRows, *, direction: str, query_order: np.ndarray, depth: int) -> Pool:
    """The union of every run's top `depth` for the queries in `query_order`, duplicates removed.

    `query_order` is the sampled queries in the order their candidates should be packed (seeded);
    rows of other queries and ranks deeper than `depth` are ignored.
    """
    query_order = np.asarray(query_order, dtype=np.int64)
    mask = (rows.rank <= depth) & np.isin(rows.query, query_order)
    rows = rows.select(mask)
    sorter = np.argsort(query_order, kind="stable")
    query_position = sorter[np.searchsorted(query_order, rows.query, sorter=sorter)] if len(rows) else rows.query
    keys = query_keys(direction, rows.query, rows.target)
    # Row order: query position, then rank, then run id; the first row of a key decides its place.
    row_order = np.lexsort((rows.run, rows.rank, query_position))
    keys_sorted = keys[row_order]
    unique_keys, first_index, inverse = np.unique(keys_sorted, return_index=True, return_inverse=True)
    placement = np.argsort(first_index, kind="stable")  # unique pairs in order of first appearance
    pair_keys = unique_keys[placement]
    rank_of_unique = np.empty(len(unique_keys), dtype=np.int64)
    rank_of_unique[placement] = np.arange(len(unique_keys))
    pair_index_sorted = rank_of_unique[inverse]
    first, second = decode_keys(pair_keys)
    pair_query = rows.query[row_order][first_index[placement]]

    # One source per (pair, run): the best rank (a symmetric t2t/i2i pair may come from both its members).
    src_pair = pair_index_sorted
    src_run = rows.run[row_order]
    src_rank = rows.rank[row_order]
    src_score = rows.score[row_order]
    src_order = np.lexsort((src_rank, src_run, src_pair))
    src_pair, src_run, src_rank, src_score = (a[src_order] for a in (src_pair, src_run, src_rank, src_score))
    keep = np.ones(len(src_pair), dtype=bool)
    if len(src_pair):
        keep[1:] = (src_pair[1:] != src_pair[:-1]) | (src_run[1:] != src_run[:-1])
    return Pool(
        direction=direction,
        keys=pair_keys,
        first=first,
        second=second,
        query=pair_query,
        source_pair=src_pair[keep],
        source_run=src_run[keep],
        source_rank=src_rank[keep],
        source_score=src_score[keep],
        proposals=int(len(rows)),
    )


def pool_without(pool: Pool, keys) -> Pool:
    """`pool` without the pairs whose keys are in `keys` (and their sources), the order kept. Proposals still
    count them: an annotator did propose them."""
    drop = np.isin(pool.keys, np.asarray(sorted(keys), dtype=np.int64))
    if not drop.any():
        return pool
    kept = np.flatnonzero(~drop)
    new_index = np.full(len(pool.keys), -1, dtype=np.int64)
    new_index[kept] = np.arange(len(kept))
    source_kept = ~drop[pool.source_pair] if len(pool.source_pair) else np.zeros(0, dtype=bool)
    return Pool(
        direction=pool.direction,
        keys=pool.keys[kept],
        first=pool.first[kept],
        second=pool.second[kept],
        query=pool.query[kept],
        source_pair=new_index[pool.source_pair[source_kept]],
        source_run=pool.source_run[source_kept],
        source_rank=pool.source_rank[source_kept],
        source_score=pool.source_score[source_kept],
        proposals=pool.proposals,
    )


def exclusion_keys(rows: CandidateRows, *, direction: str, depth: int) -> np.ndarray:
    """Keys of every pair that some annotator ranks in its top `depth` for the pair's query (sorted)."""
    mask = rows.rank <= depth
    return np.unique(query_keys(direction, rows.query[mask], rows.target[mask]))


def overlap_matrix(pair_ids: np.ndarray, run_ids: np.ndarray) -> dict:
    """Per pair of runs: pairs proposed by both, by either, and their ratio (Jaccard).

    Takes one entry per (pair, run) proposal. Returns {"runs": [...], "both": [[...]], "either": [[...]],
    "jaccard": [[...]]}, square matrices indexed like "runs"; the diagonal holds each run's pool size.
    """
    pair_ids = np.asarray(pair_ids, dtype=np.int64)
    run_ids = np.asarray(run_ids, dtype=np.int64)
    runs = np.unique(run_ids)
    sets = [np.unique(pair_ids[run_ids == run]) for run in runs]
    n = len(runs)
    both = [[0] * n for _ in range(n)]
    either = [[0] * n for _ in range(n)]
    jaccard = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            common = len(np.intersect1d(sets[i], sets[j], assume_unique=True))
            union = len(sets[i]) + len(sets[j]) - common
            both[i][j] = int(common)
            either[i][j] = int(union)
            jaccard[i][j] = round(common / union, 4) if union else 0.0
    return {"runs": [int(r) for r in runs], "both": both, "either": either, "jaccard": jaccard}
