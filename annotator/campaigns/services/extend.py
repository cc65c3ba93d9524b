"""Extending a campaign, in three named steps: pool runs for the stages' queries (pooling), pack the new
candidates into new HITs with gold (packing), write the new pairs, their sources, the HITs and their items.
A first build extends an empty campaign; adding a run extends a built one.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
from django.db.models import Count
from django.utils import timezone

from annotator.analysis.pooling import DIRECTION_KIND, decode_keys
from annotator.campaigns.models.campaign import (
    Campaign,
    Hit,
    HitItem,
    ItemRole,
    Pair,
    PairKind,
    PairSource,
)
from annotator.campaigns.services.packing import ExtensionPlan, PackingState, pack_stage_into
from annotator.campaigns.services.pooling import DatasetIndex, pool_stages
from annotator.core.bulk import objects_create, rows_insert


def _pair_fields(*, kind: str, keys: np.ndarray, index: DatasetIndex) -> list[dict]:
    first, second = decode_keys(keys)
    if kind == PairKind.IMAGE_CAPTION:
        original = index.image_of(second) == first
        return [
            {"image_id": int(a), "caption_id": int(b), "is_original": bool(o)}
            for a, b, o in zip(first, second, original, strict=True)
        ]
    if kind == PairKind.CAPTION_CAPTION:
        original = index.image_of(first) == index.image_of(second)
        return [
            {"caption_id": int(a), "other_caption_id": int(b), "is_original": bool(o)}
            for a, b, o in zip(first, second, original, strict=True)
        ]
    return [
        {"image_id": int(a), "other_image_id": int(b), "is_original": False} for a, b in zip(first, second, strict=True)
    ]


def _existing_pairs(campaign: Campaign) -> dict[int, int]:
    """key -> Pair id for the campaign's pairs."""
    result = {}
    rows = Pair.objects.filter(campaign=campaign).values_list(
        "pk", "kind", "image_id", "caption_id", "other_image_id", "other_caption_id"
    )
    for pk, kind, image_id, caption_id, other_image_id, other_caption_id in rows:
        if kind == PairKind.IMAGE_CAPTION:
            key = (image_id << 32) | caption_id
        elif kind == PairKind.CAPTION_CAPTION:
            key = (caption_id << 32) | other_caption_id
        else:
            key = (image_id << 32) | other_image_id
        result[key] = pk
    return result


def _packing_state(campaign: Campaign) -> tuple[PackingState, int]:
    """The campaign as packing needs it (its pairs, what was asked, gold uses) and the next HIT index."""
    existing = _existing_pairs(campaign)
    packed_candidates = set(_existing_keys_with_role(campaign, existing, roles=[ItemRole.CANDIDATE]))
    uses: dict[int, int] = defaultdict(int)
    pair_of_id = {pk: key for key, pk in existing.items()}
    for pair_id, hits in (
        HitItem.objects.filter(hit__campaign=campaign)
        .exclude(role=ItemRole.CANDIDATE)
        .values("pair_id")
        .annotate(n=Count("hit_id", distinct=True))
        .values_list("pair_id", "n")
    ):
        uses[pair_of_id[pair_id]] = hits
    last_index = Hit.objects.filter(campaign=campaign).order_by("-index").values_list("index", flat=True).first()
    state = PackingState(
        existing=existing,
        packed_candidates=packed_candidates,
        candidate_keys=set(packed_candidates),
        gold_uses=uses,
    )
    return state, 0 if last_index is None else last_index + 1


def _write_plan(
    *,
    campaign: Campaign,
    plan: ExtensionPlan,
    kind: str,
    existing: dict[int, int],
    index: DatasetIndex,
    next_index: int,
) -> int:
    """Write the planned pairs, in a stable order, then their sources, the HITs and their items (COPY on
    PostgreSQL). Returns the number of new HITs."""
    key_array = np.array(plan.pair_keys, dtype=np.int64)
    fields = _pair_fields(kind=kind, keys=key_array, index=index)
    pair_rows = [
        {
            "campaign_id": campaign.pk,
            "kind": kind,
            "direction": plan.pair_meta[key][0],
            "query_id": plan.pair_meta[key][1],
            "sampling_method": plan.pair_method.get(key, ""),
            **f,
        }
        for key, f in zip(plan.pair_keys, fields, strict=True)
    ]
    pair_id = dict(existing)
    pair_id.update(zip(plan.pair_keys, rows_insert(Pair, pair_rows), strict=True))
    source_rows = [
        {"pair_id": pair_id[key], "run_id": run, "direction": direction, "rank": rank, "score": score}
        for key, run, direction, rank, score in plan.sources
    ]
    if existing:  # pairs already there may have this run's provenance from before
        objects_create(PairSource, [PairSource(**row) for row in source_rows], ignore_conflicts=True)
    else:
        rows_insert(PairSource, source_rows, ids=False)
    now = timezone.now()
    hit_rows = [
        {
            "campaign_id": campaign.pk,
            "index": next_index + i,
            "stage": direction,
            "assignments_required": campaign.redundancy,
            "has_room": True,
            "gold_light": light,
            "created_at": now,
        }
        for i, (direction, _items, light) in enumerate(plan.hits)
    ]
    hit_ids = rows_insert(Hit, hit_rows)
    item_rows = [
        {"hit_id": hit_id, "position": position, "pair_id": pair_id[key], "role": role}
        for hit_id, (_direction, items, _light) in zip(hit_ids, plan.hits, strict=True)
        for position, (key, role, _query) in enumerate(items, start=1)
    ]
    rows_insert(HitItem, item_rows, ids=False)
    return len(hit_ids)


def campaign_extend(
    *,
    campaign: Campaign,
    stages: list[dict],
    pool_run_ids: list[int],
    all_run_ids: list[int],
    index: DatasetIndex,
    salt: int,
    withheld: frozenset[int] = frozenset(),
) -> dict:
    """Pool `pool_run_ids` for each stage's queries, create the new pairs and their sources, pack the new
    candidates into new HITs with gold. Existing pairs only gain PairSource rows. Returns counts per stage.
    `withheld` pair keys (the qualification pool) are never asked in a HIT, as candidates or as gold.

    The caller holds the campaign's row lock inside a transaction."""
    state, next_index = _packing_state(campaign)
    state.withheld = withheld
    timings: dict[str, float] = defaultdict(float)
    pooled = pool_stages(
        campaign=campaign,
        stages=stages,
        pool_run_ids=pool_run_ids,
        all_run_ids=all_run_ids,
        index=index,
        timings=timings,
        withheld=withheld,
    )
    clock = time.perf_counter()
    for stage_pool in pooled:
        state.candidate_keys.update(stage_pool.pool.keys.tolist())
    plan = ExtensionPlan()
    for stage_no, stage_pool in enumerate(pooled):
        pack_stage_into(
            plan, campaign=campaign, stage_no=stage_no, pooled=stage_pool, state=state, index=index, salt=salt
        )
    timings["pack"] = time.perf_counter() - clock
    clock = time.perf_counter()
    new_hits = _write_plan(
        campaign=campaign,
        plan=plan,
        kind=DIRECTION_KIND[stages[0]["direction"]],
        existing=state.existing,
        index=index,
        next_index=next_index,
    )
    timings["write"] = time.perf_counter() - clock
    return {
        "stages": plan.report,
        "new_pairs": len(plan.pair_keys),
        "new_hits": new_hits,
        "timings": {name: round(seconds, 3) for name, seconds in timings.items()},
    }


def _existing_keys_with_role(campaign: Campaign, existing: dict[int, int], *, roles: list[str]) -> list[int]:
    key_of = {pk: key for key, pk in existing.items()}
    ids = HitItem.objects.filter(hit__campaign=campaign, role__in=roles).values_list("pair_id", flat=True).distinct()
    return [key_of[pk] for pk in ids if pk in key_of]
