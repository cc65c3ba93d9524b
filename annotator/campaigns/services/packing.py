"""The packing step of a build: each stage's new candidates into HITs of candidates plus gold, planned in
memory (`ExtensionPlan`) before anything is written. The pure packing and the gold choice live in
`annotator.analysis.packing`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from annotator.analysis.packing import CANDIDATE, GoldPicker, PackingError, pack_stage
from annotator.analysis.pooling import DIRECTION_SPACES, key_function, key_query, query_keys
from annotator.campaigns.models.campaign import Campaign
from annotator.campaigns.services.gold import originals, positives_by_query
from annotator.campaigns.services.pooling import DatasetIndex, StagePool, stage_rng
from annotator.core.errors import ApplicationError


@dataclass
class ExtensionPlan:
    """What an extension writes: the new pairs in a stable order, every pooled (pair, run) source, the new
    HITs, and a report per stage."""

    pair_keys: list[int] = field(default_factory=list)
    pair_meta: dict[int, tuple[str, int]] = field(default_factory=dict)  # key -> (direction, query)
    pair_method: dict[int, str] = field(default_factory=dict)  # key -> how it was sampled (CxC's names)
    sources: list[tuple] = field(default_factory=list)  # (key, run, direction, rank, score)
    hits: list[tuple[str, list, bool]] = field(default_factory=list)  # (direction, items, gold-light)
    report: list[dict] = field(default_factory=list)

    def add_pair(self, key: int, *, direction: str, query: int, existing: dict[int, int]) -> None:
        """Plan a new Pair for `key` unless the campaign or the plan has it already."""
        if key not in existing and key not in self.pair_meta:
            self.pair_keys.append(key)
            self.pair_meta[key] = (direction, query)


@dataclass
class PackingState:
    """What packing must know of the campaign, kept up to date stage by stage: its pairs (key -> id), the
    keys asked as candidates so far, every candidate key (gold must not be one) and how often each gold key
    is used."""

    existing: dict[int, int]
    packed_candidates: set[int]
    candidate_keys: set[int]
    gold_uses: dict[int, int]
    # Keys set aside for the qualification test: never HIT gold (annotator.campaigns.services.qualification_pool).
    withheld: frozenset[int] = frozenset()


def pack_stage_into(
    plan: ExtensionPlan,
    *,
    campaign: Campaign,
    stage_no: int,
    pooled: StagePool,
    state: PackingState,
    index: DatasetIndex,
    salt: int,
) -> None:
    """Plan the sources, new pairs and HITs of one stage. Pairs already asked as candidates are not asked
    again (a pair that was only gold so far is asked now); the seed, the stage and `salt` fix the order."""
    direction, pool, excluded = pooled.stage["direction"], pooled.pool, pooled.excluded
    queries = np.asarray(pooled.stage["queries"], dtype=np.int64)
    rng = stage_rng(campaign, 2, stage_no, salt)
    for i in range(len(pool.source_pair)):
        plan.sources.append(
            (
                int(pool.keys[pool.source_pair[i]]),
                int(pool.source_run[i]),
                direction,
                int(pool.source_rank[i]),
                float(pool.source_score[i]),
            )
        )
    fresh = np.array([k not in state.packed_candidates for k in pool.keys.tolist()], dtype=bool)
    fresh_keys, fresh_query = pool.keys[fresh], pool.query[fresh]
    for key, query in zip(fresh_keys.tolist(), fresh_query.tolist(), strict=True):
        plan.add_pair(key, direction=direction, query=query, existing=state.existing)
        if pooled.methods:
            plan.pair_method.setdefault(key, pooled.methods.get(key, ""))
    sampled = {}
    if pooled.methods:
        for key in fresh_keys.tolist():
            method = pooled.methods.get(key, "")
            sampled[method] = sampled.get(method, 0) + 1
    if len(fresh_keys) == 0:
        plan.report.append({"direction": direction, "proposals": pool.proposals, "new_pairs": 0, "hits": 0})
        return
    original_keys = originals(direction=direction, index=index)
    picker = GoldPicker(
        rng=rng,
        reuse_limit=campaign.gold_reuse_limit,
        make_key=key_function(direction),
        positives_by_query=positives_by_query(direction=direction, queries=queries, index=index, rng=rng),
        all_positives=original_keys,
        candidate_keys=state.candidate_keys,
        negative_targets=index.ids(DIRECTION_SPACES[direction][1]),
        excluded_keys=excluded,
        original_keys=set(original_keys.tolist()),
        uses=state.gold_uses,
        withheld_keys=state.withheld,
    )
    filler = np.array(sorted(state.packed_candidates), dtype=np.int64)
    extra_by_query, extra_sources = _extra_candidates(
        pooled, direction=direction, blocked=state.candidate_keys | state.withheld | picker.original_keys
    )
    try:
        hits = pack_stage(
            pool_keys=fresh_keys,
            pool_query=fresh_query,
            per_hit=campaign.candidates_per_hit,
            n_positive=campaign.gold_positives_per_hit,
            n_negative=campaign.gold_negatives_per_hit,
            picker=picker,
            filler_keys=filler,
            rng=rng,
            light_share=campaign.gold_light_share,
            extra_candidates=extra_by_query,
        )
    except PackingError as error:
        raise ApplicationError(str(error)) from error
    state.gold_uses = picker.uses
    state.packed_candidates.update(fresh_keys.tolist())
    full_gold = campaign.gold_positives_per_hit + campaign.gold_negatives_per_hit
    fresh_set = set(fresh_keys.tolist())
    for items in hits:
        gold = 0
        for key, role, _query in items:
            if role != CANDIDATE:
                gold += 1
                plan.add_pair(key, direction=direction, query=key_query(direction, key), existing=state.existing)
            elif key in extra_sources and key not in fresh_set and key not in state.packed_candidates:
                # A gold-light HIT's extra candidate: a new pair with its runs' ranks below the pooling depth.
                plan.add_pair(key, direction=direction, query=key_query(direction, key), existing=state.existing)
                plan.sources.extend(extra_sources[key])
                state.packed_candidates.add(key)
                state.candidate_keys.add(key)
        plan.hits.append((direction, items, gold < full_gold))
    report = {"direction": direction, "proposals": pool.proposals, "new_pairs": int(len(fresh_keys)), "hits": len(hits)}
    if sampled:
        report["sampling"] = dict(sorted(sampled.items()))
    plan.report.append(report)


def _extra_candidates(
    pooled: StagePool, *, direction: str, blocked: set[int]
) -> tuple[dict[int, list[int]], dict[int, list[tuple]]]:
    """Adaptive gold: per query, the pairs the pooled runs rank just below the pooling depth (best rank first)
    that are no candidate, original or qualification pair; and each one's sources (key, run, direction, rank,
    score) for when a gold-light HIT asks it."""
    rows = pooled.deeper
    by_query: dict[int, list[int]] = {}
    sources: dict[int, list[tuple]] = {}
    if rows is None or len(rows) == 0:
        return by_query, sources
    keys = query_keys(direction, rows.query, rows.target)
    for i in np.lexsort((keys, rows.rank)).tolist():
        key = int(keys[i])
        if key in blocked:
            continue
        known = sources.setdefault(key, [])
        if all(source[1] != int(rows.run[i]) for source in known):  # a run's best rank (symmetric pairs)
            known.append((key, int(rows.run[i]), direction, int(rows.rank[i]), float(rows.score[i])))
        listed = by_query.setdefault(int(rows.query[i]), [])
        if key not in listed:
            listed.append(key)
    return by_query, sources
