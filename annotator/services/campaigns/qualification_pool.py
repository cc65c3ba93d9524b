"""The qualification pool: gold pairs set aside at build time for the qualification test only.

A test drawn from the campaign's HIT gold tells a worker which HIT items are gold, and the right answer,
when they meet them again. So the build first sets aside original pairs (positives) and sure negatives
(pairs no annotator ranks within the gold exclusion depth, in either direction) that no annotator pooled;
campaign building then keeps them out of every HIT (`withheld`), and whatever ended up in a HIT anyway is
dropped from the pool. A run added later that proposes a pool pair withdraws it from the pool.

Everything random comes from the campaign's seed, like the rest of the build.
"""

from __future__ import annotations

import random
from collections import defaultdict
from itertools import combinations

from annotator.models import Campaign, Candidate, Caption, Image, Pair, PairKind, QualificationItem, QualificationRole

DIRECTION_KIND = {"i2t": PairKind.IMAGE_CAPTION, "t2i": PairKind.IMAGE_CAPTION, "t2t": PairKind.CAPTION_CAPTION}
DIRECTION_KIND["i2i"] = PairKind.IMAGE_IMAGE
LOW = (1 << 32) - 1
# How many random pairs are drawn per wanted negative before giving up (a dense ranking rules many out).
NEGATIVE_DRAWS = 20


def pair_key(kind: str, first: int, second: int) -> int:
    """The build's pair key: (image, caption) for image-caption pairs, (low, high) for the symmetric kinds."""
    if kind != PairKind.IMAGE_CAPTION and first > second:
        first, second = second, first
    return (int(first) << 32) | int(second)


def pair_key_of(pair) -> int:
    """The key of a Pair (or anything with the same member fields)."""
    if pair.kind == PairKind.IMAGE_CAPTION:
        return pair_key(pair.kind, pair.image_id, pair.caption_id)
    if pair.kind == PairKind.CAPTION_CAPTION:
        return pair_key(pair.kind, pair.caption_id, pair.other_caption_id)
    return pair_key(pair.kind, pair.image_id, pair.other_image_id)


def ranked_keys(
    *, run_ids: list[int], kind: str, firsts: set[int], seconds: set[int], max_rank: int, directions: set[str]
) -> set[int]:
    """Keys of pairs whose members are in `firsts` x `seconds` and that some run ranks within `max_rank` in
    one of `directions` (the campaign's stages, as for HIT gold negatives)."""
    keys: set[int] = set()
    base = Candidate.objects.filter(run_id__in=run_ids, rank__lte=max_rank).order_by()
    if kind == PairKind.IMAGE_CAPTION:
        lookups = (("i2t", firsts, False), ("t2i", seconds, True))
    elif kind == PairKind.CAPTION_CAPTION:
        lookups = (("t2t", firsts | seconds, False),)
    else:
        lookups = (("i2i", firsts | seconds, False),)
    for direction, queries, swapped in lookups:
        if direction not in directions:
            continue
        query_list = sorted(queries)
        for start in range(0, len(query_list), 900):
            rows = base.filter(direction=direction, query_id__in=query_list[start : start + 900]).values_list(
                "query_id", "target_id"
            )
            for query, target in rows:
                first, second = (target, query) if swapped else (query, target)
                keys.add(pair_key(kind, first, second))
    return keys


def _originals(*, kind: str, dataset_id: int, images: list[int]) -> list[int]:
    """Original pairs of the given images: (image, own caption), or two captions of one image."""
    captions_of: dict[int, list[int]] = defaultdict(list)
    for caption_id, image_id in Caption.objects.filter(dataset_id=dataset_id, image_id__in=images).values_list(
        "pk", "image_id"
    ):
        captions_of[image_id].append(caption_id)
    if kind == PairKind.IMAGE_CAPTION:
        return [pair_key(kind, image, caption) for image in images for caption in sorted(captions_of[image])]
    if kind == PairKind.CAPTION_CAPTION:
        return [pair_key(kind, a, b) for image in images for a, b in combinations(sorted(captions_of[image]), 2)]
    return []


def _images_of_queries(*, stages: list[dict], dataset_id: int) -> list[int]:
    """The images the campaign's sampled queries are about (so test items look like HIT items)."""
    images: set[int] = set()
    for stage in stages:
        queries = [int(q) for q in stage["queries"]]
        if stage["direction"] in ("i2t", "i2i"):
            images.update(queries)
        else:
            for start in range(0, len(queries), 900):
                images.update(
                    Caption.objects.filter(pk__in=queries[start : start + 900]).values_list("image_id", flat=True)
                )
    if not images:
        images.update(Image.objects.filter(dataset_id=dataset_id).values_list("pk", flat=True))
    return sorted(images)


def qualification_pool_plan(*, campaign: Campaign, run_ids: list[int], stages: list[dict]) -> list[tuple[int, str]]:
    """Choose the pool: [(pair key, role)], about half positives and half negatives, none pooled by any run.

    Reads only: ranks of the candidate pairs drawn (not the whole ranking). Deterministic for a seed.
    """
    size = campaign.qualification_pool_size if campaign.qualification_items else 0
    if size <= 0:
        return []
    kind = DIRECTION_KIND[stages[0]["direction"]]
    rng = random.Random(f"qualification-pool:{campaign.seed}")
    images = _images_of_queries(stages=stages, dataset_id=campaign.dataset_id)
    depth = max(campaign.pool_depth, campaign.gold_exclusion_depth)
    directions = {stage["direction"] for stage in stages}

    def ranks_for(keys: list[int]) -> set[int]:
        firsts = {k >> 32 for k in keys}
        seconds = {k & LOW for k in keys}
        return ranked_keys(
            run_ids=run_ids, kind=kind, firsts=firsts, seconds=seconds, max_rank=depth, directions=directions
        )

    chosen: list[tuple[int, str]] = []
    originals = _originals(kind=kind, dataset_id=campaign.dataset_id, images=images)
    original_set = set(originals)
    if originals:
        rng.shuffle(originals)
        pooled = ranked_keys(
            run_ids=run_ids,
            kind=kind,
            firsts={k >> 32 for k in originals},
            seconds={k & LOW for k in originals},
            max_rank=campaign.pool_depth,
            directions=directions,
        )
        fresh = [k for k in originals if k not in pooled]
        # At most half of the fresh originals: HIT gold positives come from the same supply.
        chosen += [(k, QualificationRole.GOLD_POSITIVE) for k in fresh[: min(size // 2, len(fresh) // 2)]]

    wanted = size - len(chosen)
    if kind == PairKind.IMAGE_CAPTION:
        seconds_space = list(Caption.objects.filter(dataset_id=campaign.dataset_id).values_list("pk", flat=True))
        own_image = dict(Caption.objects.filter(dataset_id=campaign.dataset_id).values_list("pk", "image_id"))
    elif kind == PairKind.CAPTION_CAPTION:
        own_image = dict(Caption.objects.filter(dataset_id=campaign.dataset_id).values_list("pk", "image_id"))
        seconds_space = list(own_image)
    else:
        own_image = {}
        seconds_space = images
    if not seconds_space:
        return chosen
    draws = []
    taken = {k for k, _ in chosen}
    for _ in range(wanted * NEGATIVE_DRAWS):
        if kind == PairKind.CAPTION_CAPTION:
            first, second = rng.choice(seconds_space), rng.choice(seconds_space)
            if own_image.get(first) == own_image.get(second):
                continue
        else:
            first, second = rng.choice(images), rng.choice(seconds_space)
            if kind == PairKind.IMAGE_CAPTION and own_image.get(second) == first:
                continue
            if kind == PairKind.IMAGE_IMAGE and first == second:
                continue
        key = pair_key(kind, first, second)
        if key in taken or key in original_set:
            continue
        taken.add(key)
        draws.append(key)
    ranked = ranks_for(draws) if draws else set()
    negatives = [k for k in draws if k not in ranked][:wanted]
    chosen += [(k, QualificationRole.GOLD_NEGATIVE) for k in negatives]
    return chosen


def qualification_pool_halved(plan: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Half of each role of `plan` (for a dataset too small for HIT gold and the full pool)."""
    halves = []
    for role in (QualificationRole.GOLD_POSITIVE, QualificationRole.GOLD_NEGATIVE):
        of_role = [entry for entry in plan if entry[1] == role]
        halves += of_role[: len(of_role) // 2]
    return halves


def _member_fields(kind: str, key: int) -> dict:
    first, second = key >> 32, key & LOW
    if kind == PairKind.IMAGE_CAPTION:
        return {"image_id": first, "caption_id": second}
    if kind == PairKind.CAPTION_CAPTION:
        return {"caption_id": first, "other_caption_id": second}
    return {"image_id": first, "other_image_id": second}


def qualification_pool_write(*, campaign: Campaign, plan: list[tuple[int, str]], kind: str) -> int:
    """Replace the campaign's pool with `plan`, leaving out any pair that is in a HIT after all.

    The caller holds the campaign's row lock (a build). Returns the pool's size.
    """
    QualificationItem.objects.filter(campaign=campaign).delete()
    in_hits = {pair_key_of(pair) for pair in Pair.objects.filter(campaign=campaign).only(*_KEY_FIELDS)}
    rows = [
        QualificationItem(campaign=campaign, key=key, kind=kind, role=role, **_member_fields(kind, key))
        for key, role in plan
        if key not in in_hits
    ]
    QualificationItem.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


_KEY_FIELDS = ("kind", "image_id", "caption_id", "other_image_id", "other_caption_id")


def qualification_pool_withdraw_hit_pairs(*, campaign: Campaign) -> int:
    """Withdraw pool items that are now pairs of the campaign (a run added later proposed them).

    The caller holds the campaign's row lock. Idempotent. Returns how many were withdrawn now.
    """
    pool = {item.key: item.pk for item in QualificationItem.objects.filter(campaign=campaign, withdrawn=False)}
    if not pool:
        return 0
    clash = [
        pool[key]
        for pair in Pair.objects.filter(campaign=campaign).only(*_KEY_FIELDS)
        if (key := pair_key_of(pair)) in pool
    ]
    return QualificationItem.objects.filter(pk__in=clash).update(withdrawn=True)


def qualification_pool_keys(*, campaign: Campaign) -> set[int]:
    """Keys of every pool item, withdrawn or not: campaign building never puts them in a HIT."""
    return set(QualificationItem.objects.filter(campaign=campaign).values_list("key", flat=True))
