"""Pure pooling and packing logic (numpy, no database)."""

from collections import Counter

import numpy as np
import pytest

from annotator.analysis.packing import (
    GoldPicker,
    PackingError,
    fill_up,
    is_gold_light,
    pack_groups,
    pack_stage,
    query_groups,
)
from annotator.analysis.pooling import (
    CandidateRows,
    decode_keys,
    encode_keys,
    exclusion_keys,
    overlap_matrix,
    pool_candidates,
    pool_without,
    sample_queries,
)


def rows(*tuples):
    return CandidateRows.from_rows(list(tuples))


def test_pool_removes_duplicates_across_runs_and_keeps_each_runs_rank():
    data = rows(
        (1, 10, 100, 1, 0.9),
        (1, 10, 101, 2, 0.8),
        (1, 10, 102, 3, 0.7),
        (2, 10, 101, 1, 0.95),
        (2, 10, 103, 2, 0.85),
        (2, 10, 100, 3, 0.5),
        (1, 11, 100, 1, 0.6),
        (2, 11, 104, 1, 0.9),
        (1, 12, 105, 1, 0.9),  # query 12 is not sampled
    )
    pool = pool_candidates(data, direction="i2t", query_order=np.array([11, 10]), depth=2)
    assert pool.proposals == 6  # rank <= 2 for queries 10 and 11
    first, second = decode_keys(pool.keys)
    # Query 11 is packed first (its order in query_order), then query 10 by best rank.
    assert list(zip(first.tolist(), second.tolist(), strict=True)) == [
        (11, 100),
        (11, 104),
        (10, 100),
        (10, 101),
        (10, 103),
    ]
    assert pool.query.tolist() == [11, 11, 10, 10, 10]
    sources = {
        (int(pool.keys[p]) >> 32, int(pool.keys[p]) & 0xFFFFFFFF, int(r)): (int(k), float(sc))
        for p, r, k, sc in zip(pool.source_pair, pool.source_run, pool.source_rank, pool.source_score, strict=True)
    }
    assert sources[(10, 101, 1)] == (2, 0.8) and sources[(10, 101, 2)] == (1, 0.95)
    assert (10, 100, 2) not in sources  # run 2 ranked it 3rd, deeper than the pool
    assert len(sources) == 6


def test_pool_without_drops_withheld_pairs_and_their_sources_and_keeps_the_order():
    data = rows((1, 10, 100, 1, 0.9), (2, 10, 100, 2, 0.8), (1, 10, 101, 2, 0.7), (1, 11, 102, 1, 0.6))
    pool = pool_candidates(data, direction="i2t", query_order=np.array([10, 11]), depth=5)
    withheld = int(encode_keys(np.array([10]), np.array([100]))[0])
    kept = pool_without(pool, {withheld})
    assert withheld not in kept.keys.tolist() and len(kept) == len(pool) - 1
    assert kept.keys.tolist() == [k for k in pool.keys.tolist() if k != withheld]
    assert kept.query.tolist() == [10, 11]
    sources = sorted((int(kept.keys[p]), int(r)) for p, r in zip(kept.source_pair, kept.source_run, strict=True))
    assert sources == sorted((k, 1) for k in kept.keys.tolist())  # run 2's source of the withheld pair is gone
    assert kept.proposals == pool.proposals and pool_without(pool, set()) is pool


def test_t2i_keys_put_the_image_first_and_symmetric_pairs_merge():
    t2i = pool_candidates(rows((1, 500, 7, 1, 0.9)), direction="t2i", query_order=np.array([500]), depth=5)
    assert decode_keys(t2i.keys)[0].tolist() == [7] and decode_keys(t2i.keys)[1].tolist() == [500]
    sts = pool_candidates(
        rows((1, 3, 4, 1, 0.9), (1, 4, 3, 1, 0.9), (1, 4, 4, 2, 0.1)),
        direction="t2t",
        query_order=np.array([3, 4]),
        depth=5,
    )
    assert len(sts) == 2 and sorted(decode_keys(sts.keys)[0].tolist()) == [3, 4]
    assert len(sts.source_pair) == 2  # (3,4) proposed twice by run 1 counts once as provenance


def test_sampling_is_seeded_and_sized():
    universe = np.arange(100, 200)
    a = sample_queries(universe, count=10, fraction=None, rng=np.random.default_rng(1))
    b = sample_queries(universe, count=10, fraction=None, rng=np.random.default_rng(1))
    c = sample_queries(universe, count=10, fraction=None, rng=np.random.default_rng(2))
    assert a.tolist() == b.tolist() != c.tolist() and len(set(a.tolist())) == 10
    assert len(sample_queries(universe, count=None, fraction=0.25, rng=np.random.default_rng(0))) == 25
    assert len(sample_queries(universe, count=500, fraction=None, rng=np.random.default_rng(0))) == 100
    assert (
        sample_queries(universe, count=None, fraction=None, rng=np.random.default_rng(0)).tolist() == universe.tolist()
    )


def test_exclusion_keys_cover_every_runs_top_depth():
    data = rows((1, 10, 100, 1, 0.9), (2, 10, 200, 25, 0.1), (2, 10, 300, 26, 0.1))
    keys = exclusion_keys(data, direction="i2t", depth=25)
    assert set(keys.tolist()) == {int(encode_keys([10], [100])[0]), int(encode_keys([10], [200])[0])}


def test_overlap_matrix_counts_both_and_either():
    matrix = overlap_matrix(np.array([1, 2, 3, 2, 3, 4]), np.array([7, 7, 7, 8, 8, 8]))
    assert matrix["runs"] == [7, 8]
    assert matrix["both"] == [[3, 2], [2, 3]] and matrix["either"] == [[3, 4], [4, 3]]
    assert matrix["jaccard"][0][1] == 0.5


def test_pack_groups_keeps_queries_together_where_they_fit():
    sizes = [10, 6, 5, 5, 4, 2, 16, 3, 1]
    groups, start = [], 0
    for size in sizes:
        groups.append(np.arange(start, start + size))
        start += size
    hits = pack_groups(groups, per_hit=16)
    assert [len(h) for h in hits[:-1]] == [16] * (len(hits) - 1) and len(hits) == -(-sum(sizes) // 16)
    assert sorted(i for h in hits for i in h) == list(range(sum(sizes)))
    hit_of = {i: n for n, h in enumerate(hits) for i in h}
    split = [g for g in groups if len({hit_of[int(i)] for i in g}) > 1]
    assert not split  # these sizes can be packed without splitting any query


def test_pack_groups_splits_a_query_only_when_nothing_fits():
    hits = pack_groups([np.arange(0, 20), np.arange(20, 30)], per_hit=16)
    assert [len(h) for h in hits] == [16, 14]
    # The 10-pair query fits whole into the first HIT; only the 20-pair query (larger than a HIT) is split.
    assert set(range(20, 30)) <= set(hits[0])
    assert sorted(hits[0] + hits[1]) == list(range(30))


def test_fill_up_uses_other_pairs_and_refuses_when_too_few():
    rng = np.random.default_rng(0)
    hit = fill_up([1, 2, 3], per_hit=6, filler=np.array([1, 2, 3, 4, 5, 6, 7]), rng=rng)
    assert len(hit) == len(set(hit)) == 6 and hit[:3] == [1, 2, 3]
    with pytest.raises(PackingError, match="lower the candidates per HIT"):
        fill_up([1, 2], per_hit=6, filler=np.array([1, 2, 3]), rng=rng)


def _picker(rng, **kw):
    def make_key(query, target):
        return (query << 32) | target

    base = dict(
        rng=rng,
        reuse_limit=2,
        make_key=make_key,
        positives_by_query={1: [make_key(1, 11), make_key(1, 12)], 2: [make_key(2, 21)]},
        all_positives=np.array([make_key(q, t) for q, t in ((1, 11), (1, 12), (2, 21), (3, 31))]),
        candidate_keys={make_key(1, 12)},
        negative_targets=np.arange(11, 60),
        excluded_keys=np.array([make_key(1, t) for t in range(11, 50)]),
        original_keys={make_key(q, t) for q, t in ((1, 11), (1, 12), (2, 21), (3, 31))},
    )
    base.update(kw)
    return GoldPicker(**base)


def test_gold_picker_prefers_the_hits_queries_and_respects_the_reuse_limit():
    picker = _picker(np.random.default_rng(0))
    first = picker.positives(taken=set(), queries=[1], n=1)
    assert first == [(1 << 32) | 11]  # 1-12 is a pooled candidate, used only as a last resort
    picks = [picker.positives(taken=set(), queries=[1], n=1)[0] for _ in range(5)]
    assert max(Counter(first + picks).values()) <= 2
    negatives = picker.negatives(taken=set(), queries=[1], n=3, fallback_queries=np.array([1]))
    for key in negatives:
        assert key >> 32 == 1 and (key & 0xFFFFFFFF) >= 50  # outside the excluded top
    with pytest.raises(PackingError, match="gold reuse limit"):
        for _ in range(10):
            picker.positives(taken=set(), queries=[1, 2], n=2)


def test_pack_stage_gives_exact_composition_and_seeded_positions():
    keys = np.array([(q << 32) | t for q in range(1, 5) for t in range(100, 109)], dtype=np.int64)
    queries = keys >> 32

    def build(seed):
        rng = np.random.default_rng(seed)
        picker = _picker(
            rng,
            positives_by_query={q: [(q << 32) | (200 + q)] for q in range(1, 5)},
            all_positives=np.array([(q << 32) | (200 + q) for q in range(1, 5)]),
            original_keys={(q << 32) | (200 + q) for q in range(1, 5)},
            candidate_keys=set(keys.tolist()),
            negative_targets=np.arange(300, 400),
            excluded_keys=np.array([], dtype=np.int64),
            reuse_limit=5,
        )
        return pack_stage(
            pool_keys=keys,
            pool_query=queries,
            per_hit=8,
            n_positive=1,
            n_negative=1,
            picker=picker,
            filler_keys=np.array([], dtype=np.int64),
            rng=rng,
        )

    hits = build(3)
    assert len(hits) == 5  # 36 candidates -> 4.5 HITs of 8, the last filled up from other queries
    for hit in hits:
        assert Counter(role for _k, role, _q in hit) == {"candidate": 8, "gold_positive": 1, "gold_negative": 1}
        assert len({k for k, _r, _q in hit}) == 10
    assert build(3) == hits and build(4) != hits
    assert set(keys.tolist()) <= {k for hit in hits for k, role, _q in hit if role == "candidate"}
    # The gold positive of a HIT is an original pair of one of its queries.
    for hit in hits:
        hit_queries = {q for _k, role, q in hit if role == "candidate"}
        gold = [k for k, role, _q in hit if role == "gold_positive"][0]
        assert gold >> 32 in hit_queries


def test_query_groups_split_on_query_changes():
    groups = query_groups(np.array([5, 5, 3, 3, 3, 9]))
    assert [g.tolist() for g in groups] == [[0, 1], [2, 3, 4], [5]]


def test_is_gold_light_spreads_the_share_evenly():
    assert [is_gold_light(1 / 3, n) for n in range(6)] == [False, False, True, False, False, True]
    assert not any(is_gold_light(0.0, n) for n in range(10))
    assert all(is_gold_light(1.0, n) for n in range(10))
    assert sum(is_gold_light(0.25, n) for n in range(100)) == 25


def test_pack_stage_makes_a_share_of_hits_gold_light_with_the_groups_of_a_full_hit():
    """A gold-light HIT: the same 8 pooled candidates, one gold item and, where the other gold item would have
    gone (another query's group), an extra candidate ranked below the pooling depth: 10 items in two groups of
    5, as a full HIT."""
    keys = np.array([(q << 32) | t for q in range(1, 9) for t in range(100, 104)], dtype=np.int64)
    extra = {q: [(q << 32) | 150, (q << 32) | 151] for q in range(1, 9)}

    def build(share):
        rng = np.random.default_rng(5)
        picker = _picker(
            rng,
            positives_by_query={q: [(q << 32) | (200 + q)] for q in range(1, 9)},
            all_positives=np.array([(q << 32) | (200 + q) for q in range(1, 9)]),
            original_keys={(q << 32) | (200 + q) for q in range(1, 9)},
            candidate_keys=set(keys.tolist()),
            negative_targets=np.arange(300, 400),
            excluded_keys=np.array([], dtype=np.int64),
            reuse_limit=5,
        )
        return pack_stage(
            pool_keys=keys,
            pool_query=keys >> 32,
            per_hit=8,
            n_positive=1,
            n_negative=1,
            picker=picker,
            filler_keys=np.array([], dtype=np.int64),
            rng=rng,
            light_share=share,
            extra_candidates=extra,
        )

    hits = build(0.5)
    assert len(hits) == len(build(0.0)) == 4  # the same HITs: a light HIT packs no more pooled pairs
    light = [hit for number, hit in enumerate(hits) if is_gold_light(0.5, number)]
    assert len(light) == 2
    for hit in hits:
        roles = Counter(role for _k, role, _q in hit)
        groups = Counter(k >> 32 for k, _r, _q in hit)
        assert sum(roles.values()) == 10 and len({k for k, _r, _q in hit}) == 10
        assert sorted(groups.values()) == [5, 5]  # two queries, each with one more item than its 4 candidates
        gold = [k >> 32 for k, role, _q in hit if role != "candidate"]
        if hit in light:
            extras = [k for k, role, _q in hit if role == "candidate" and k & 0xFFFFFFFF >= 150]
            assert roles["candidate"] == 9 and len(gold) == 1 and len(extras) == 1
            assert extras[0] >> 32 != gold[0] and extras[0] in extra[extras[0] >> 32]
        else:
            assert roles == {"candidate": 8, "gold_positive": 1, "gold_negative": 1} and len(set(gold)) == 2
    assert [Counter(r for _k, r, _q in hit)["gold_positive"] for hit in light] == [1, 0]  # in turn
    assert set(keys.tolist()) <= {k for hit in hits for k, role, _q in hit if role == "candidate"}
