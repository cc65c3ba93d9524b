"""The pooling step of a build: the dataset's ids as arrays, the runs' candidate rows, the seeded random
streams, and each stage's pool. The pure pooling (sampling, top-k pools, exclusion keys) lives in
`annotator.analysis.pooling`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from django.db import connection

from annotator.analysis.cxc_c2i_sampling import (
    C2I_METHOD,
    CAPTION_SIMILARITY_KINDS,
    IMAGE_SIMILARITY_KINDS,
    c2i_intrasim_sample,
)
from annotator.analysis.cxc_sampling import OTHER_MODALITY_KINDS, cxc_sample
from annotator.analysis.pooling import (
    DIRECTION_SPACES,
    CandidateRows,
    Pool,
    exclusion_keys,
    pool_candidates,
    pool_without,
)
from annotator.campaigns.models.campaign import Campaign, Sampling
from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Caption, Image
from annotator.ranking.models.ranking import Candidate, RankingRun

# Adaptive gold: how far below the pooling depth a gold-light HIT's extra candidate may come from.
DEEPER_RANKS = 5


class DatasetIndex:
    """The dataset's ids as arrays: images, captions and each caption's own image."""

    def __init__(self, dataset_id: int):
        self.image_ids = np.array(
            sorted(Image.objects.filter(dataset_id=dataset_id).values_list("pk", flat=True)), dtype=np.int64
        )
        rows = list(Caption.objects.filter(dataset_id=dataset_id).order_by("pk").values_list("pk", "image_id"))
        self.caption_ids = np.array([r[0] for r in rows], dtype=np.int64)
        self.caption_image = np.array([r[1] for r in rows], dtype=np.int64)
        self.captions_of_image: dict[int, list[int]] = defaultdict(list)
        for caption_id, image_id in rows:
            self.captions_of_image[image_id].append(caption_id)

    def ids(self, space: str) -> np.ndarray:
        return self.image_ids if space == "image" else self.caption_ids

    def image_of(self, caption_ids: np.ndarray) -> np.ndarray:
        caption_ids = np.asarray(caption_ids, dtype=np.int64)
        index = np.searchsorted(self.caption_ids, caption_ids)
        index = np.clip(index, 0, max(len(self.caption_ids) - 1, 0))
        found = self.caption_ids[index] == caption_ids if len(self.caption_ids) else np.zeros(len(caption_ids), bool)
        return np.where(found, self.caption_image[index] if len(self.caption_ids) else -1, -1)


def load_query_universe(*, run_ids: list[int], direction: str) -> np.ndarray:
    ids = Candidate.objects.filter(run_id__in=run_ids, direction=direction).values_list("query_id", flat=True)
    return np.unique(np.fromiter(ids.distinct(), dtype=np.int64))


def load_rows(*, run_ids: list[int], direction: str, max_rank: int, queries: np.ndarray | None) -> CandidateRows:
    """Candidate rows of `direction` with rank <= max_rank, for `queries` (None: every query).

    Read with a plain cursor (the rows go straight into numpy), in chunks of queries.
    """
    base = Candidate.objects.filter(run_id__in=run_ids, direction=direction, rank__lte=max_rank).order_by()
    fields = ("run_id", "query_id", "target_id", "rank", "score")
    querysets = [base]
    if queries is not None:
        query_list = [int(q) for q in queries]
        querysets = [base.filter(query_id__in=query_list[i : i + 900]) for i in range(0, len(query_list), 900)]
    rows = []
    with connection.cursor() as cursor:
        for queryset in querysets:
            sql, params = queryset.values_list(*fields).query.sql_with_params()
            cursor.execute(sql, params)
            rows.extend(cursor.fetchall())
    return CandidateRows.from_rows(rows)


def check_ids(*, rows: CandidateRows, direction: str, index: DatasetIndex) -> None:
    query_space, target_space = DIRECTION_SPACES[direction]
    for values, space in ((rows.query, query_space), (rows.target, target_space)):
        if len(values) and values.max() >= 2**32:  # pair keys pack two ids into 64 bits
            raise ApplicationError(f"{space.capitalize()} ids beyond 2**32 are not supported by campaign building.")
        if len(values) and not np.isin(values, index.ids(space)).all():
            raise ApplicationError(
                f"A ranking run has {direction} candidates whose {space} ids are not in this dataset; rerun it."
            )


def stage_rng(campaign: Campaign, *parts: int) -> np.random.Generator:
    return np.random.default_rng([int(campaign.seed) & 0xFFFFFFFF, *parts])


@dataclass
class StagePool:
    """One stage's pooled candidates and the pair keys no gold negative may take (any run's top exclusion
    depth)."""

    stage: dict
    pool: Pool
    excluded: np.ndarray
    methods: dict[int, str] | None = None  # pair key -> CxC sampling method, for CxC-sampled stages
    # Adaptive gold: the pooled runs' rows just below the pooling depth, the extra candidates of gold-light HITs.
    deeper: CandidateRows | None = None


def pool_stages(
    *,
    campaign: Campaign,
    stages: list[dict],
    pool_run_ids: list[int],
    all_run_ids: list[int],
    index: DatasetIndex,
    timings: dict[str, float],
    withheld: frozenset[int] = frozenset(),
) -> list[StagePool]:
    """Pool the top `pool_depth` of `pool_run_ids` for each stage's queries; every run's rows (`all_run_ids`)
    decide which pairs gold negatives must avoid. `withheld` pairs (the qualification pool) are left out of
    the pools, so no HIT asks them. Adds the seconds spent to `timings`."""
    max_rank = max(campaign.pool_depth, campaign.gold_exclusion_depth if campaign.gold_negatives_per_hit else 0)
    if campaign.gold_light_share > 0:
        max_rank = max(max_rank, campaign.pool_depth + DEEPER_RANKS)
    pooled = []
    for stage in stages:
        direction, queries = stage["direction"], np.asarray(stage["queries"], dtype=np.int64)
        clock = time.perf_counter()
        rows = load_rows(run_ids=all_run_ids, direction=direction, max_rank=max_rank, queries=queries)
        timings["read_candidates"] += time.perf_counter() - clock
        clock = time.perf_counter()
        check_ids(rows=rows, direction=direction, index=index)
        methods, deeper = None, None
        if campaign.sampling == Sampling.CXC and direction in C2I_DIRECTIONS:
            pool, methods = c2i_intrasim_pool(
                campaign=campaign, direction=direction, queries=queries, run_ids=pool_run_ids, index=index
            )
        elif campaign.sampling == Sampling.CXC:
            pool, methods = cxc_pool(
                campaign=campaign, direction=direction, queries=queries, run_ids=pool_run_ids, index=index
            )
        else:
            pool_rows = rows.select(np.isin(rows.run, np.asarray(pool_run_ids, dtype=np.int64)))
            pool = pool_candidates(pool_rows, direction=direction, query_order=queries, depth=campaign.pool_depth)
            if campaign.gold_light_share > 0:
                deeper = pool_rows.select(
                    (pool_rows.rank > campaign.pool_depth) & (pool_rows.rank <= campaign.pool_depth + DEEPER_RANKS)
                )
        if withheld:
            pool = pool_without(pool, withheld)
        excluded = np.empty(0, dtype=np.int64)
        if campaign.gold_negatives_per_hit:
            excluded = exclusion_keys(rows, direction=direction, depth=campaign.gold_exclusion_depth)
        pooled.append(StagePool(stage=stage, pool=pool, excluded=excluded, methods=methods, deeper=deeper))
        timings["pool"] += time.perf_counter() - clock
    return pooled


# -- Crisscrossed Captions' other-modality sampling -----------------------------------------------------------


def other_modality_runs(*, run_ids: list[int], direction: str) -> list[int]:
    """The runs whose image-image ranking samples `direction` (t2t: image similarity, i2i: caption similarity)."""
    kinds = OTHER_MODALITY_KINDS.get(direction)
    if kinds is None:
        raise ApplicationError("Crisscrossed Captions sampling chooses caption-caption or image-image pairs only.")
    return list(
        RankingRun.objects.filter(pk__in=run_ids, annotator__kind__in=kinds).order_by("pk").values_list("pk", flat=True)
    )


def _query_captions(campaign: Campaign, images: np.ndarray, index: DatasetIndex) -> dict[int, int]:
    """The caption that stands for each image in a caption-caption stage: one of its own, drawn with the seed."""
    rng = stage_rng(campaign, 4)
    chosen = {}
    for image in np.sort(np.asarray(images, dtype=np.int64)).tolist():
        group = index.captions_of_image.get(image, [])
        if group:
            chosen[image] = group[int(rng.integers(len(group)))]
    return chosen


def cxc_query_universe(*, campaign: Campaign, run_ids: list[int], direction: str, index: DatasetIndex) -> np.ndarray:
    """The queries a CxC-sampled stage can draw from: the images the other-modality runs rank (i2i), or the
    caption standing for each of them (t2t); for image-caption stages, the images the intramodal runs rank
    (i2t) or their captions (t2i). Refuses runs that cannot sample this stage."""
    if direction in C2I_DIRECTIONS:
        return c2i_query_universe(run_ids=run_ids, direction=direction, index=index)
    sources = other_modality_runs(run_ids=run_ids, direction=direction)
    if not sources:
        needed = " or ".join(OTHER_MODALITY_KINDS[direction])
        what = "caption pairs from image similarity" if direction == "t2t" else "image pairs from caption similarity"
        raise ApplicationError(
            f"Crisscrossed Captions sampling chooses {what}: add a finished {needed} run to the campaign."
        )
    images = load_query_universe(run_ids=sources, direction="i2i")
    if direction == "i2i":
        return images
    return np.array(sorted(_query_captions(campaign, images, index).values()), dtype=np.int64)


def cxc_pool(
    *, campaign: Campaign, direction: str, queries: np.ndarray, run_ids: list[int], index: DatasetIndex
) -> tuple[Pool, dict[int, str]]:
    """The stage's pool sampled CxC's way (annotator.analysis.cxc_sampling), and each pair's method. Only
    rows a run proposed keep a PairSource; co-captions and random pairs have none."""
    sources = other_modality_runs(run_ids=run_ids, direction=direction)
    if direction == "i2i":
        query_images, query_caption = queries, None
    else:
        query_images = index.image_of(queries)
        query_caption = {int(image): int(caption) for image, caption in zip(query_images, queries, strict=True)}
    image_rows = load_rows(run_ids=sources, direction="i2i", max_rank=campaign.pool_depth, queries=query_images)
    rows, methods = cxc_sample(
        direction=direction,
        image_rows=image_rows,
        query_items=query_images,
        depth=campaign.pool_depth,
        rng=stage_rng(campaign, 5, 0 if direction == "i2i" else 1),
        all_items=index.image_ids,
        captions_of=index.captions_of_image,
        query_caption=query_caption,
        cocaption_share=campaign.cocaption_share,
        random_share=campaign.random_pair_share,
    )
    depth = int(rows.rank.max()) if len(rows) else campaign.pool_depth
    pool = pool_candidates(rows, direction=direction, query_order=queries, depth=depth)
    proposed = pool.source_run >= 0
    pool.source_pair, pool.source_run = pool.source_pair[proposed], pool.source_run[proposed]
    pool.source_rank, pool.source_score = pool.source_rank[proposed], pool.source_score[proposed]
    return pool, methods


# -- Crisscrossed Captions' image-caption pairs from intramodal similarity (c2i_intrasim) ---------------------

C2I_DIRECTIONS = ("i2t", "t2i")


def intrasim_runs(run_ids: list[int]) -> tuple[list[int], list[int]]:
    """The campaign's runs whose image-image ranking is caption similarity, and those whose is image similarity."""
    runs = RankingRun.objects.filter(pk__in=run_ids).order_by("pk").values_list("pk", "annotator__kind")
    by_caption = [pk for pk, kind in runs if kind in CAPTION_SIMILARITY_KINDS]
    by_image = [pk for pk, kind in runs if kind in IMAGE_SIMILARITY_KINDS]
    if not by_caption and not by_image:
        needed = " or ".join(CAPTION_SIMILARITY_KINDS + IMAGE_SIMILARITY_KINDS)
        raise ApplicationError(
            "Crisscrossed Captions sampling chooses image-caption pairs from intramodal similarity (images "
            f"whose captions or pixels are similar): add a finished {needed} run to the campaign."
        )
    return by_caption, by_image


def c2i_query_universe(*, run_ids: list[int], direction: str, index: DatasetIndex) -> np.ndarray:
    """The images the intramodal runs rank (i2t), or every caption of those images (t2i)."""
    by_caption, by_image = intrasim_runs(run_ids)
    images = load_query_universe(run_ids=by_caption + by_image, direction="i2i")
    if direction == "i2t":
        return images
    return index.caption_ids[np.isin(index.caption_image, images)]


def c2i_intrasim_pool(
    *, campaign: Campaign, direction: str, queries: np.ndarray, run_ids: list[int], index: DatasetIndex
) -> tuple[Pool, dict[int, str]]:
    """The stage's pool sampled CxC's way for SITS (annotator.analysis.cxc_c2i_sampling): each query's
    `pool_depth` pairs through its image's neighbours, half by caption similarity and half by image similarity.
    Every pair keeps the run that proposed its neighbour image as its PairSource."""
    by_caption, by_image = intrasim_runs(run_ids)
    queries = np.asarray(queries, dtype=np.int64)
    pivots = queries if direction == "i2t" else index.image_of(queries)
    depth = campaign.pool_depth

    def image_rows(ids: list[int]) -> CandidateRows:
        return load_rows(run_ids=ids, direction="i2i", max_rank=depth + 1, queries=np.unique(pivots))

    rows = c2i_intrasim_sample(
        direction=direction,
        caption_rows=image_rows(by_caption),
        image_rows=image_rows(by_image),
        queries=queries,
        depth=depth,
        rng=stage_rng(campaign, 5, 2 if direction == "i2t" else 3),
        captions_of=index.captions_of_image,
        image_of_caption=dict(zip(queries.tolist(), pivots.tolist(), strict=True)),
    )
    pool = pool_candidates(rows, direction=direction, query_order=queries, depth=depth)
    return pool, dict.fromkeys(pool.keys.tolist(), C2I_METHOD)
