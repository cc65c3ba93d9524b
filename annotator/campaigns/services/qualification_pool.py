"""The qualification pool: pairs set aside at build time for the qualification test only.

A test drawn from the campaign's HIT gold tells a worker which HIT items are gold, and the right answer,
when they meet them again. So the build first sets aside matching pairs (originals) and sure non-matching
pairs (no annotator ranks them within the gold exclusion depth, in either direction) in the campaign's
qualification_positive_share, whatever the annotators rank: good annotators pool nearly every original, so
a pool of unpooled originals only would be all negatives and "always no" would pass. Campaign building then
keeps every pool pair out of every HIT (`withheld`: not a candidate, not gold), so a reserved original is
not asked of the crowd in this campaign. No caption appears twice in a pool, so none repeats in a test.

Everything random comes from the campaign's seed, like the rest of the build.
"""

from __future__ import annotations

import random
from collections import defaultdict
from itertools import combinations

from annotator.campaigns.models.campaign import Campaign, Pair, PairKind
from annotator.campaigns.models.gold import QualificationItem, QualificationRole
from annotator.datasets.models.dataset import Caption, Image
from annotator.ranking.models.ranking import Candidate

DIRECTION_KIND = {"i2t": PairKind.IMAGE_CAPTION, "t2i": PairKind.IMAGE_CAPTION, "t2t": PairKind.CAPTION_CAPTION}
DIRECTION_KIND["i2i"] = PairKind.IMAGE_IMAGE
LOW = (1 << 32) - 1
# How many random pairs are drawn per wanted negative before giving up (a dense ranking rules many out).
NEGATIVE_DRAWS = 20
# At most this share of a campaign's originals that an annotator pooled is reserved for the pool: each one
# reserved is an original pair the crowd does not check in this campaign (on ten photos of five captions,
# 12 of 50 rather than 20).
RESERVED_POOLED_SHARE = 0.25


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


def _originals(*, kind: str, dataset_id: int, images: list[int]) -> dict[int, list[int]]:
    """Original pairs of the given images, by image: (image, own caption), or two captions of one image."""
    captions_of: dict[int, list[int]] = defaultdict(list)
    for caption_id, image_id in Caption.objects.filter(dataset_id=dataset_id, image_id__in=images).values_list(
        "pk", "image_id"
    ):
        captions_of[image_id].append(caption_id)
    if kind == PairKind.IMAGE_CAPTION:
        return {image: [pair_key(kind, image, caption) for caption in sorted(captions_of[image])] for image in images}
    if kind == PairKind.CAPTION_CAPTION:
        return {
            image: [pair_key(kind, a, b) for a, b in combinations(sorted(captions_of[image]), 2)] for image in images
        }
    return {}


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


def _captions_of(kind: str, key: int) -> tuple[int, ...]:
    """The captions a pair shows: a test never shows one caption twice."""
    if kind == PairKind.IMAGE_CAPTION:
        return (key & LOW,)
    if kind == PairKind.CAPTION_CAPTION:
        return (key >> 32, key & LOW)
    return ()


def _reserve_positives(
    *, kind: str, by_image: dict[int, list[int]], pooled: set[int], wanted: int, rng: random.Random
) -> list[int]:
    """Up to `wanted` original pairs for the pool, at most half of all (HIT gold positives come from the same
    supply), no caption twice: those no annotator pooled first (they cost the HITs nothing), then pooled
    ones, at most RESERVED_POOLED_SHARE of all, which the build then keeps out of the HITs. Taken one image
    at a time in turn, so every query loses at most a candidate or two."""
    total = sum(len(keys) for keys in by_image.values())
    wanted = min(wanted, total // 2)
    pooled_left = int(total * RESERVED_POOLED_SHARE)
    images = sorted(by_image)
    rng.shuffle(images)
    order = []  # (pooled, turn, image's place, key): unpooled first, one per image per turn
    for place, image in enumerate(images):
        keys = list(by_image[image])
        rng.shuffle(keys)
        for is_pooled in (False, True):
            of_kind = [key for key in keys if (key in pooled) == is_pooled]
            order += [(is_pooled, turn, place, key) for turn, key in enumerate(of_kind)]
    chosen: list[int] = []
    used: set[int] = set()
    for is_pooled, _turn, _place, key in sorted(order):
        if len(chosen) == wanted or (is_pooled and not pooled_left):
            break
        captions = _captions_of(kind, key)
        if not used.intersection(captions):
            chosen.append(key)
            used.update(captions)
            pooled_left -= is_pooled
    return chosen


def _sure_negatives(
    *,
    kind: str,
    images: list[int],
    dataset_id: int,
    wanted: int,
    avoid: set[int],
    used_captions: set[int],
    is_ranked,
    rng: random.Random,
) -> list[int]:
    """Up to `wanted` random pairs that are not original and that no run ranks within the exclusion depth,
    no caption twice (nor one of `used_captions`)."""
    if wanted <= 0:
        return []
    own_image = dict(Caption.objects.filter(dataset_id=dataset_id).values_list("pk", "image_id"))
    if kind == PairKind.IMAGE_IMAGE:
        seconds_space = images
    else:
        seconds_space = sorted(own_image)
    if not seconds_space or not images:
        return []
    draws: list[int] = []
    taken = set(avoid)
    used = set(used_captions)
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
        captions = _captions_of(kind, key)
        if key in taken or used.intersection(captions) or len(set(captions)) < len(captions):
            continue
        taken.add(key)
        used.update(captions)
        draws.append(key)
    ranked = is_ranked(draws) if draws else set()
    return [k for k in draws if k not in ranked][:wanted]


def qualification_pool_plan(*, campaign: Campaign, run_ids: list[int], stages: list[dict]) -> list[tuple[int, str]]:
    """Choose the pool: [(pair key, role)], matching pairs (originals) in the campaign's
    qualification_positive_share and sure non-matching pairs for the rest, no caption twice, whatever the
    annotators rank: pooled originals are reserved too, and the build keeps every pool pair out of the HITs.
    When fewer originals or sure negatives can be had, the other role shrinks with them so the share holds
    (image-image campaigns have no originals: their pool is sure negatives only, and the page says so).

    Reads only: ranks of the pairs drawn (not the whole ranking). Deterministic for a seed.
    """
    size = campaign.qualification_pool_size if campaign.qualification_items else 0
    if size <= 0:
        return []
    kind = DIRECTION_KIND[stages[0]["direction"]]
    share = campaign.qualification_positive_share
    rng = random.Random(f"qualification-pool:{campaign.seed}")
    images = _images_of_queries(stages=stages, dataset_id=campaign.dataset_id)
    depth = max(campaign.pool_depth, campaign.gold_exclusion_depth)
    directions = {stage["direction"] for stage in stages}

    def ranked(keys: list[int], max_rank: int) -> set[int]:
        return ranked_keys(
            run_ids=run_ids,
            kind=kind,
            firsts={k >> 32 for k in keys},
            seconds={k & LOW for k in keys},
            max_rank=max_rank,
            directions=directions,
        )

    by_image = _originals(kind=kind, dataset_id=campaign.dataset_id, images=images)
    original_keys = [key for keys in by_image.values() for key in keys]
    if not original_keys:  # image-image pairs: nothing is a known match
        negatives = _sure_negatives(
            kind=kind,
            images=images,
            dataset_id=campaign.dataset_id,
            wanted=size,
            avoid=set(),
            used_captions=set(),
            is_ranked=lambda keys: ranked(keys, depth),
            rng=rng,
        )
        return [(k, QualificationRole.GOLD_NEGATIVE) for k in negatives]
    wanted_positives = max(1, round(size * share))
    positives = _reserve_positives(
        kind=kind,
        by_image=by_image,
        pooled=ranked(original_keys, campaign.pool_depth),
        wanted=wanted_positives,
        rng=rng,
    )
    negatives = _sure_negatives(
        kind=kind,
        images=images,
        dataset_id=campaign.dataset_id,
        wanted=min(size - wanted_positives, round(len(positives) * (1 - share) / share)),
        avoid=set(original_keys),
        used_captions={c for key in positives for c in _captions_of(kind, key)},
        is_ranked=lambda keys: ranked(keys, depth),
        rng=rng,
    )
    positives = positives[: round(len(negatives) * share / (1 - share))]
    return [(k, QualificationRole.GOLD_POSITIVE) for k in positives] + [
        (k, QualificationRole.GOLD_NEGATIVE) for k in negatives
    ]


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
    """Withdraw pool items that are pairs of the campaign: a safety net, since a build or a run added later
    never pools a pool pair (it stays reserved); a campaign built before pooled originals were reserved may
    have some.

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
