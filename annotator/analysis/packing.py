"""Packing pooled pairs into HITs with gold items (pure Python and numpy, no ORM).

Everything here works on int64 pair keys (see `annotator.analysis.pooling`) and one seeded
`numpy.random.Generator`, so the same inputs and seed give the same HITs, item for item.

The rules (ECCV Caption Sec. 3.2, App. B.1):
- every HIT holds exactly `per_hit` candidates + `n_positive` gold positives + `n_negative` gold negatives;
- no pair twice in a HIT;
- candidates of one query stay together where they fit (best-fit packing of query groups, a group is
  split only when no remaining group fits the room left in the HIT);
- the last HIT of a stage, when short, is filled up with candidates of other queries that are already in
  other HITs (they receive one more set of answers); gold is never used as filler, so the composition
  never changes;
- gold positives are original pairs of a query in the HIT where possible, then other original pairs;
  pairs that are also pooled candidates are used as gold only when nothing else is left;
- gold negatives are random pairs for a query in the HIT that are in no annotator's top
  `gold_exclusion_depth` for that query, not original and not pooled;
- a gold pair appears in at most `reuse_limit` HITs;
- positions are a seeded permutation, so gold sits at random positions;
- adaptive gold: with a `light_share`, that share of the HITs (spread evenly, `is_gold_light`) is
  gold-light: one gold item (a positive and a negative in turn) and, in the place of each one left out, one
  more candidate: a pair an annotator ranked just below the pooling depth for a query of the HIT
  (`extra_candidates`). It joins a query group of the HIT other than the gold item's, as the gold item left
  out would have, so a gold-light HIT has the same number of items and the same query groups as a full one.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Callable

import numpy as np

CANDIDATE = "candidate"
GOLD_POSITIVE = "gold_positive"
GOLD_NEGATIVE = "gold_negative"


class PackingError(ValueError):
    """The inputs cannot give HITs of the requested composition; the message says what to change."""


def query_groups(pair_query: np.ndarray) -> list[np.ndarray]:
    """Indices of pairs grouped by query, groups in order of first appearance (pairs of a query are contiguous)."""
    pair_query = np.asarray(pair_query)
    if len(pair_query) == 0:
        return []
    starts = np.flatnonzero(np.r_[True, pair_query[1:] != pair_query[:-1]])
    ends = np.r_[starts[1:], len(pair_query)]
    return [np.arange(s, e) for s, e in zip(starts, ends, strict=True)]


def pack_groups(groups: list[np.ndarray], *, per_hit: int) -> list[list[int]]:
    """Best-fit packing of query groups into HITs of `per_hit` items; only the last HIT may be short.

    For the room left in the HIT being filled, the largest remaining group that fits is taken (the
    earliest of that size). When none fits, the next group in order is split: what fits goes in, the
    rest stays first in line.
    """
    if per_hit < 1:
        raise PackingError("A HIT needs at least one candidate.")
    groups = [list(map(int, g)) for g in groups if len(g)]
    order = deque(range(len(groups)))
    by_size: dict[int, deque] = defaultdict(deque)
    for gid in order:
        by_size[len(groups[gid])].append(gid)
    used: set[int] = set()
    remaining = sum(len(g) for g in groups)
    hits: list[list[int]] = []
    current: list[int] = []
    while remaining:
        room = per_hit - len(current)
        chosen = None
        for size in range(min(room, max(by_size, default=0)), 0, -1):
            bucket = by_size.get(size)
            while bucket and bucket[0] in used:
                bucket.popleft()
            if bucket:
                chosen = bucket.popleft()
                break
        if chosen is not None:
            current.extend(groups[chosen])
            used.add(chosen)
            remaining -= len(groups[chosen])
        else:
            while order[0] in used:
                order.popleft()
            gid = order.popleft()
            used.add(gid)
            items = groups[gid]
            current.extend(items[:room])
            remaining -= room
            rest = items[room:]
            groups.append(rest)
            new_id = len(groups) - 1
            order.appendleft(new_id)
            by_size[len(rest)].appendleft(new_id)
        if len(current) == per_hit:
            hits.append(current)
            current = []
    if current:
        hits.append(current)
    return hits


def is_gold_light(share: float, number: int) -> bool:
    """Whether the `number`-th HIT (from 0) of a packing is gold-light when `share` of them are: spread
    evenly (share 1/3: the 3rd, 6th, 9th, ...), the same for the same inputs."""
    if share <= 0:
        return False
    return math.floor((number + 1) * share + 1e-9) > math.floor(number * share + 1e-9)


def light_gold_roles(*, n_positive: int, n_negative: int, number: int) -> tuple[int, int]:
    """(positives, negatives) of a gold-light HIT: one gold item, a positive and a negative in turn
    (`number` counts the gold-light HITs), or the one role the campaign asks."""
    if n_positive and (not n_negative or number % 2 == 0):
        return 1, 0
    return 0, 1


def extra_candidate(
    extra_candidates: dict[int, list[int]], *, queries: list[int], blocked: set[int], rng: np.random.Generator
) -> tuple[int, int] | None:
    """(key, query): the best-ranked unused extra candidate of one of `queries` (in a seeded order)."""
    for i in rng.permutation(len(queries)).tolist():
        for key in extra_candidates.get(queries[i], ()):
            if key not in blocked:
                return key, queries[i]
    return None


def _extras_for_light_hit(
    extra_candidates: dict[int, list[int]], *, n: int, queries: list[int], blocked: set[int], rng: np.random.Generator
) -> list[tuple[int, int]]:
    """`n` extra candidates for a gold-light HIT, one per gold item it leaves out, or none when there are fewer
    (the HIT stays full: a light HIT always has the full one's size)."""
    found: list[tuple[int, int]] = []
    blocked = set(blocked)
    for _ in range(n):
        extra = extra_candidate(extra_candidates, queries=queries, blocked=blocked, rng=rng)
        if extra is None:
            return []
        found.append(extra)
        blocked.add(extra[0])
    return found


def fill_up(hit: list[int], *, per_hit: int, filler: np.ndarray, rng: np.random.Generator) -> list[int]:
    """`hit` completed to `per_hit` items with distinct entries of `filler` not already in it (seeded)."""
    missing = per_hit - len(hit)
    if missing <= 0:
        return hit
    present = set(hit)
    options = [int(x) for x in np.unique(np.asarray(filler, dtype=np.int64)) if int(x) not in present]
    if len(options) < missing:
        raise PackingError(
            f"Only {len(present) + len(options)} different candidate pairs are available but a HIT needs "
            f"{per_hit}: lower the candidates per HIT, pool deeper, or sample more queries."
        )
    chosen = rng.choice(len(options), size=missing, replace=False)
    return hit + [options[i] for i in sorted(chosen)]


class GoldPicker:
    """Chooses gold positives and negatives for HITs, keeping count of how often each gold pair is used.

    make_key(query, target) gives the pair key for a query of the stage's direction and a target.
    `uses` may be pre-filled with the gold pairs of existing HITs (adding a run to a built campaign).
    """

    def __init__(
        self,
        *,
        rng: np.random.Generator,
        reuse_limit: int,
        make_key: Callable[[int, int], int | None],
        positives_by_query: dict[int, list[int]],
        all_positives: np.ndarray,
        candidate_keys: set[int],
        negative_targets: np.ndarray,
        excluded_keys: np.ndarray,
        original_keys: set[int],
        uses: dict[int, int] | None = None,
        tries_per_query: int = 25,
        withheld_keys: frozenset[int] | set[int] = frozenset(),
    ):
        self.rng = rng
        self.reuse_limit = max(1, int(reuse_limit))
        self.make_key = make_key
        self.positives_by_query = positives_by_query
        self.candidate_keys = candidate_keys
        self.negative_targets = np.asarray(negative_targets, dtype=np.int64)
        self.excluded_keys = np.sort(np.asarray(excluded_keys, dtype=np.int64))
        self.original_keys = original_keys
        self.uses: dict[int, int] = defaultdict(int, uses or {})
        self.tries_per_query = tries_per_query
        # Pairs kept for the qualification test: never HIT gold, so the test reveals nothing about HITs.
        self.withheld_keys = withheld_keys
        self.positive_queries: set[int] = set()  # the queries of the last HIT's gold positives
        shuffled = [int(k) for k in rng.permutation(np.asarray(all_positives, dtype=np.int64))]
        self._fallback_fresh = deque(k for k in shuffled if k not in candidate_keys)
        self._fallback_any = deque(shuffled)

    def _usable(self, key: int, taken: set[int], *, allow_candidates: bool) -> bool:
        return (
            key not in taken
            and key not in self.withheld_keys
            and self.uses[key] < self.reuse_limit
            and (allow_candidates or key not in self.candidate_keys)
        )

    def _from_queue(self, queue: deque, taken: set[int], *, allow_candidates: bool) -> int | None:
        for _ in range(len(queue)):
            key = queue.popleft()
            if self.uses[key] >= self.reuse_limit:
                continue  # used up for good
            queue.append(key)
            if self._usable(key, taken, allow_candidates=allow_candidates):
                return key
        return None

    def positives(self, *, taken: set[int], queries: list[int], n: int) -> list[int]:
        """n gold positives not in `taken` (the HIT's pairs so far), preferring the HIT's own queries."""
        picks: list[int] = []
        self.positive_queries = set()
        query_order = [queries[i] for i in self.rng.permutation(len(queries))] if queries else []
        for allow_candidates in (False, True):
            for query in query_order:
                for key in self.positives_by_query.get(query, ()):
                    if len(picks) == n:
                        break
                    if self._usable(key, taken, allow_candidates=allow_candidates):
                        picks.append(key)
                        taken.add(key)
                        self.positive_queries.add(query)
            queue = self._fallback_any if allow_candidates else self._fallback_fresh
            while len(picks) < n:
                key = self._from_queue(queue, taken, allow_candidates=allow_candidates)
                if key is None:
                    break
                picks.append(key)
                taken.add(key)
            if len(picks) == n:
                break
        if len(picks) < n:
            raise PackingError(
                "Not enough original pairs for the gold positives: raise the gold reuse limit or lower the "
                "gold positives per HIT."
            )
        for key in picks:
            self.uses[key] += 1
        return picks

    def _is_negative(self, key: int | None, taken: set[int]) -> bool:
        if key is None or key in taken or key in self.original_keys or key in self.candidate_keys:
            return False
        if key in self.withheld_keys:
            return False
        if self.uses[key] >= self.reuse_limit:
            return False
        i = np.searchsorted(self.excluded_keys, key)
        return not (i < len(self.excluded_keys) and self.excluded_keys[i] == key)

    def negatives(self, *, taken: set[int], queries: list[int], n: int, fallback_queries: np.ndarray) -> list[int]:
        """n random pairs for the HIT's queries outside every annotator's top exclusion depth."""
        picks: list[int] = []
        if n and len(self.negative_targets) == 0:
            raise PackingError("The dataset has no items to draw gold negatives from.")
        # Gold joins the group of items of its query, so a group holding gold is bigger than one without:
        # negatives go to the HIT's other queries first, so every group gets its share of gold.
        others = [q for q in queries if q not in self.positive_queries]
        for pool in (others, queries, fallback_queries):
            if len(picks) == n or len(pool) == 0:
                continue
            attempts = (
                self.tries_per_query * max(len(pool), 1) if pool is not fallback_queries else 50 * self.tries_per_query
            )
            for _ in range(attempts):
                if len(picks) == n:
                    break
                query = int(pool[self.rng.integers(len(pool))])
                target = int(self.negative_targets[self.rng.integers(len(self.negative_targets))])
                key = self.make_key(query, target)
                if self._is_negative(key, taken):
                    picks.append(key)
                    taken.add(key)
        if len(picks) < n:
            raise PackingError(
                "Could not find gold negatives outside every annotator's top exclusion depth: lower the gold "
                "exclusion depth or the gold negatives per HIT."
            )
        for key in picks:
            self.uses[key] += 1
        return picks


def pack_stage(
    *,
    pool_keys: np.ndarray,
    pool_query: np.ndarray,
    per_hit: int,
    n_positive: int,
    n_negative: int,
    picker: GoldPicker,
    filler_keys: np.ndarray,
    rng: np.random.Generator,
    light_share: float = 0.0,
    extra_candidates: dict[int, list[int]] | None = None,
) -> list[list[tuple[int, str, int | None]]]:
    """The HITs of one stage: per HIT, a list of (pair key, role, query) in position order.

    `pool_keys`/`pool_query` are the stage's new candidate pairs in packing order; `filler_keys` are
    other candidate pairs that may complete a short last HIT (the stage's own pairs are always allowed).
    query is the query a candidate was proposed for, None for gold. `light_share` of the HITs are gold-light
    (see the module docstring) when a HIT has two gold items or more and `extra_candidates` (query -> keys
    ranked just below the pooling depth, best first) has one for a query of the HIT; otherwise full.
    """
    pool_keys = np.asarray(pool_keys, dtype=np.int64)
    pool_query = np.asarray(pool_query, dtype=np.int64)
    if len(pool_keys) == 0:
        return []
    hits_idx = pack_groups(query_groups(pool_query), per_hit=per_hit)
    filler = np.unique(np.r_[pool_keys, np.asarray(filler_keys, dtype=np.int64)])
    stage_queries = np.unique(pool_query)
    query_of_key = dict(zip(pool_keys.tolist(), pool_query.tolist(), strict=True))
    hits: list[list[tuple[int, str, int | None]]] = []
    used_extra: set[int] = set()
    lights = 0
    for number, idx in enumerate(hits_idx):
        keys = [int(k) for k in pool_keys[idx]]
        if len(keys) < per_hit:
            keys = fill_up(keys, per_hit=per_hit, filler=filler, rng=rng)
        queries = sorted({int(q) for q in pool_query[idx]})
        taken = set(keys)
        found: list[tuple[int, int]] = []
        if n_positive + n_negative >= 2 and extra_candidates and is_gold_light(light_share, number):
            found = _extras_for_light_hit(
                extra_candidates, n=n_positive + n_negative - 1, queries=queries, blocked=taken | used_extra, rng=rng
            )
        extras: list[tuple[int, str, int | None]] = []
        if not found:
            positives = picker.positives(taken=taken, queries=queries, n=n_positive)
            negatives = picker.negatives(taken=taken, queries=queries, n=n_negative, fallback_queries=stage_queries)
        else:
            for extra_key, extra_query in found:
                used_extra.add(extra_key)
                taken.add(extra_key)
                extras.append((extra_key, CANDIDATE, extra_query))
            keep_positive, keep_negative = light_gold_roles(n_positive=n_positive, n_negative=n_negative, number=lights)
            lights += 1
            # The extra candidates sit where the gold items left out would have (the groups of their queries);
            # the one gold item joins another query's group, as the gold items of a full HIT do.
            extra_queries = {query for _, query in found}
            others = [q for q in queries if q not in extra_queries] or queries
            positives = picker.positives(taken=taken, queries=others, n=keep_positive)
            if keep_negative:
                picker.positive_queries = extra_queries
            negatives = picker.negatives(taken=taken, queries=queries, n=keep_negative, fallback_queries=stage_queries)
        items = (
            [(k, CANDIDATE, query_of_key.get(k)) for k in keys]
            + extras
            + [(k, GOLD_POSITIVE, None) for k in positives]
            + [(k, GOLD_NEGATIVE, None) for k in negatives]
        )
        order = rng.permutation(len(items))
        hits.append([items[i] for i in order])
    return hits
