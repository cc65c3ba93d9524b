"""Campaigns: create, build (pool + gold + pack), add a run, launch, pause, resume, finish.

The pure work (sampling, pooling, packing, gold choice) lives in `annotator.analysis.pooling` and
`annotator.analysis.packing`; this module loads ids from the database into numpy arrays, calls them and
writes the result with `bulk_create` in batches. Everything random comes from the campaign's seed, so the
same campaign options and runs build the same pairs, HITs, items and positions.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
from collections import defaultdict
from itertools import combinations

import numpy as np
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from annotator.analysis.packing import CANDIDATE, GoldPicker, PackingError, pack_stage
from annotator.analysis.pooling import (
    DIRECTION_KIND,
    DIRECTION_SPACES,
    CandidateRows,
    decode_keys,
    encode_keys,
    exclusion_keys,
    pool_candidates,
    sample_queries,
)
from annotator.errors import ApplicationError
from annotator.models import (
    CAMPAIGN_TRANSITIONS,
    Campaign,
    CampaignDirection,
    CampaignStatus,
    Candidate,
    Caption,
    Dataset,
    Hit,
    HitItem,
    Image,
    ItemRole,
    Pair,
    PairKind,
    PairSource,
    RankingRun,
    RunStatus,
    Scale,
)
from annotator.models.state import check_transition
from annotator.queue import enqueue_on_commit

logger = logging.getLogger(__name__)

CAMPAIGN_BUILD_TASK = "workers.tasks.campaigns.campaign_build_task"
BATCH_SIZE = 2000
MAX_HIT_SIZE = 100
STAGES = {
    CampaignDirection.I2T: ["i2t"],
    CampaignDirection.T2I: ["t2i"],
    CampaignDirection.BOTH: ["i2t", "t2i"],
    CampaignDirection.T2T: ["t2t"],
    CampaignDirection.I2I: ["i2i"],
}
# Options a requester sets; everything else on Campaign is state kept by the services.
OPTION_FIELDS = (
    "name",
    "direction",
    "scale",
    "rationale_followups",
    "sample_count",
    "sample_fraction",
    "seed",
    "pool_depth",
    "gold_exclusion_depth",
    "candidates_per_hit",
    "gold_positives_per_hit",
    "gold_negatives_per_hit",
    "gold_reuse_limit",
    "redundancy",
    "reward_cents",
    "platform_fee_percent",
    "lease_minutes",
    "max_hits_per_worker",
    "qualification_items",
    "qualification_pass_mark",
    "qualification_cooldown_minutes",
    "strict_gold",
    "similarity_gold_threshold",
    "gold_fail_action",
    "auto_approve_hours",
    "min_seconds_per_item",
    "confidence_threshold",
    "extra_assignment_cap",
)
# Options that change what a build produces (a rebuild with the same values is a no-op).
BUILD_FIELDS = (
    "direction",
    "sample_count",
    "sample_fraction",
    "seed",
    "pool_depth",
    "gold_exclusion_depth",
    "candidates_per_hit",
    "gold_positives_per_hit",
    "gold_negatives_per_hit",
    "gold_reuse_limit",
    "redundancy",
)


# ---------------------------------------------------------------------------------------------- create


def _validation_error(error: ValidationError) -> ApplicationError:
    if hasattr(error, "message_dict"):
        errors = [f"{field}: {message}" for field, messages in error.message_dict.items() for message in messages]
    else:
        errors = list(error.messages)
    return ApplicationError("The campaign options are not valid: " + "; ".join(errors), extra={"errors": errors})


def _check_runs(*, dataset: Dataset, runs: list[RankingRun]) -> None:
    if not runs:
        raise ApplicationError("Choose at least one finished ranking run.")
    for run in runs:
        if run.dataset_id != dataset.pk:
            raise ApplicationError(f"Ranking run {run.pk} ranks another dataset, not {dataset.name}.")
        if run.status != RunStatus.SUCCEEDED:
            raise ApplicationError(f"Ranking run {run.pk} is {run.status}; only succeeded runs can be pooled.")


def _check_options(*, campaign: Campaign, runs: list[RankingRun]) -> None:
    """The rules between options that field validators cannot express."""
    errors = []
    if campaign.sample_count is not None and campaign.sample_fraction is not None:
        errors.append("Give a sample count or a sample fraction, not both.")
    if campaign.sample_count is not None and campaign.sample_count < 1:
        errors.append("The sample count must be at least 1.")
    if campaign.pool_depth < 1:
        errors.append("The pooling depth must be at least 1.")
    if campaign.gold_exclusion_depth < campaign.pool_depth:
        errors.append("The gold-negative exclusion depth must be at least the pooling depth.")
    if campaign.hit_size > MAX_HIT_SIZE:
        errors.append(f"A HIT holds at most {MAX_HIT_SIZE} items.")
    if campaign.gold_reuse_limit < 1:
        errors.append("The gold reuse limit must be at least 1.")
    if campaign.direction in (CampaignDirection.T2T, CampaignDirection.I2I) and campaign.scale != Scale.SIMILARITY:
        errors.append("Caption-caption and image-image pairs are rated on the similarity (0-5) scale.")
    if campaign.direction == CampaignDirection.I2I and campaign.gold_positives_per_hit:
        errors.append("Image-image campaigns have no original pairs to use as gold positives; set them to 0.")
    for run in runs:
        if run.top_k < campaign.pool_depth:
            errors.append(f"Run {run.pk} kept only its top {run.top_k}; the pooling depth can be at most that.")
        if campaign.gold_negatives_per_hit and run.top_k < campaign.gold_exclusion_depth:
            errors.append(
                f"Run {run.pk} kept only its top {run.top_k}, so gold negatives cannot be checked against a top "
                f"{campaign.gold_exclusion_depth}; lower the exclusion depth to {run.top_k}."
            )
    if errors:
        raise ApplicationError("The campaign options are not valid: " + " ".join(errors), extra={"errors": errors})


def campaign_create(*, owner, dataset: Dataset, runs: list[RankingRun], **options) -> Campaign:
    """Create a draft campaign over `runs` (succeeded runs of `dataset`) with `options` (Campaign fields).

    Validates with full_clean plus the cross-option rules; raises ApplicationError (400) with every
    problem listed. Not idempotent: each call creates a campaign. No locks.
    """
    unknown = sorted(set(options) - set(OPTION_FIELDS))
    if unknown:
        raise ApplicationError(f"Unknown campaign options: {', '.join(unknown)}.")
    runs = list(runs)
    _check_runs(dataset=dataset, runs=runs)
    campaign = Campaign(owner=owner, dataset=dataset, **options)
    try:
        campaign.full_clean()
    except ValidationError as error:
        raise _validation_error(error) from error
    _check_options(campaign=campaign, runs=runs)
    with transaction.atomic():
        campaign.save()
        campaign.runs.set(runs)
    return campaign


# ---------------------------------------------------------------------------------------------- loading


class _DatasetIndex:
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


def _load_query_universe(*, run_ids: list[int], direction: str) -> np.ndarray:
    ids = Candidate.objects.filter(run_id__in=run_ids, direction=direction).values_list("query_id", flat=True)
    return np.unique(np.fromiter(ids.distinct(), dtype=np.int64))


def _load_rows(*, run_ids: list[int], direction: str, max_rank: int, queries: np.ndarray | None) -> CandidateRows:
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


def _check_ids(*, rows: CandidateRows, direction: str, index: _DatasetIndex) -> None:
    query_space, target_space = DIRECTION_SPACES[direction]
    for values, space in ((rows.query, query_space), (rows.target, target_space)):
        if len(values) and values.max() >= 2**32:  # pair keys pack two ids into 64 bits
            raise ApplicationError(f"{space.capitalize()} ids beyond 2**32 are not supported by campaign building.")
        if len(values) and not np.isin(values, index.ids(space)).all():
            raise ApplicationError(
                f"A ranking run has {direction} candidates whose {space} ids are not in this dataset; rerun it."
            )


# ---------------------------------------------------------------------------------------------- gold


def _key_function(direction: str):
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


def _originals(*, direction: str, index: _DatasetIndex) -> np.ndarray:
    """Keys of the dataset's original pairs of this direction's kind (co-captions for caption-caption)."""
    kind = DIRECTION_KIND[direction]
    if kind == PairKind.IMAGE_CAPTION:
        return np.unique(encode_keys(index.caption_image, index.caption_ids))
    if kind == PairKind.CAPTION_CAPTION:
        keys = [
            (a << 32) | b for captions in index.captions_of_image.values() for a, b in combinations(sorted(captions), 2)
        ]
        return np.unique(np.array(keys, dtype=np.int64))
    return np.empty(0, dtype=np.int64)


def _positives_by_query(*, direction: str, queries: np.ndarray, index: _DatasetIndex, rng) -> dict[int, list[int]]:
    """Original pairs to try first as gold positives for each query (shuffled with the seed)."""
    make_key = _key_function(direction)
    result: dict[int, list[int]] = {}
    if direction == "i2i":
        return result
    images = index.image_of(queries) if direction in ("t2i", "t2t") else queries
    for query, image in zip(queries.tolist(), np.asarray(images).tolist(), strict=True):
        if direction == "i2t":
            keys = [make_key(query, c) for c in index.captions_of_image.get(query, [])]
        elif direction == "t2i":
            own = make_key(query, image)
            others = [(image << 32) | c for c in index.captions_of_image.get(image, []) if c != query]
            keys = [own] + [others[i] for i in rng.permutation(len(others))]
            result[query] = keys
            continue
        else:  # t2t: co-captions
            keys = [make_key(query, c) for c in index.captions_of_image.get(image, []) if c != query]
        result[query] = [keys[i] for i in rng.permutation(len(keys))]
    return result


# ---------------------------------------------------------------------------------------------- writing


def _pair_fields(*, kind: str, keys: np.ndarray, index: _DatasetIndex) -> list[dict]:
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


def _gold_query(direction: str, key: int) -> int:
    first, second = key >> 32, key & ((1 << 32) - 1)
    return second if direction == "t2i" else first


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


def _stage_rng(campaign: Campaign, *parts: int) -> np.random.Generator:
    return np.random.default_rng([int(campaign.seed) & 0xFFFFFFFF, *parts])


def _extend(
    *,
    campaign: Campaign,
    stages: list[dict],
    pool_run_ids: list[int],
    all_run_ids: list[int],
    index: _DatasetIndex,
    salt: int,
) -> dict:
    """Pool `pool_run_ids` for each stage's queries, create the new pairs and their sources, pack the new
    candidates into new HITs with gold. Existing pairs only gain PairSource rows. Returns counts per stage."""
    kind = DIRECTION_KIND[stages[0]["direction"]]
    existing = _existing_pairs(campaign)
    packed_candidates = set(_existing_keys_with_role(campaign, existing, roles=[ItemRole.CANDIDATE]))
    candidate_keys = set(packed_candidates)
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
    next_index = Hit.objects.filter(campaign=campaign).order_by("-index").values_list("index", flat=True).first()
    next_index = 0 if next_index is None else next_index + 1
    max_rank = max(campaign.pool_depth, campaign.gold_exclusion_depth if campaign.gold_negatives_per_hit else 0)

    timings = defaultdict(float)
    planned = []
    for stage in stages:
        direction, queries = stage["direction"], np.asarray(stage["queries"], dtype=np.int64)
        clock = time.perf_counter()
        rows = _load_rows(run_ids=all_run_ids, direction=direction, max_rank=max_rank, queries=queries)
        timings["read_candidates"] += time.perf_counter() - clock
        clock = time.perf_counter()
        _check_ids(rows=rows, direction=direction, index=index)
        pool_rows = rows.select(np.isin(rows.run, np.asarray(pool_run_ids, dtype=np.int64)))
        pool = pool_candidates(pool_rows, direction=direction, query_order=queries, depth=campaign.pool_depth)
        excluded = np.empty(0, dtype=np.int64)
        if campaign.gold_negatives_per_hit:
            excluded = exclusion_keys(rows, direction=direction, depth=campaign.gold_exclusion_depth)
        planned.append((stage, pool, excluded))
        candidate_keys.update(pool.keys.tolist())
        timings["pool"] += time.perf_counter() - clock

    clock = time.perf_counter()

    new_pair_keys: list[int] = []
    new_pair_meta: dict[int, tuple[str, int]] = {}  # key -> (direction, query)
    sources = []  # (key, run, direction, rank, score)
    hits_plan = []  # (direction, items)
    report = []
    for stage_no, (stage, pool, excluded) in enumerate(planned):
        direction = stage["direction"]
        queries = np.asarray(stage["queries"], dtype=np.int64)
        rng = _stage_rng(campaign, 2, stage_no, salt)
        for i in range(len(pool.source_pair)):
            sources.append(
                (
                    int(pool.keys[pool.source_pair[i]]),
                    int(pool.source_run[i]),
                    direction,
                    int(pool.source_rank[i]),
                    float(pool.source_score[i]),
                )
            )
        # To ask: pooled pairs not yet asked as candidates (a pair that was only gold so far is asked now).
        fresh = np.array([k not in packed_candidates for k in pool.keys.tolist()], dtype=bool)
        fresh_keys, fresh_query = pool.keys[fresh], pool.query[fresh]
        for key, query in zip(fresh_keys.tolist(), fresh_query.tolist(), strict=True):
            if key not in existing and key not in new_pair_meta:
                new_pair_keys.append(key)
                new_pair_meta[key] = (direction, query)
        if len(fresh_keys) == 0:
            report.append({"direction": direction, "proposals": pool.proposals, "new_pairs": 0, "hits": 0})
            continue
        originals = _originals(direction=direction, index=index)
        picker = GoldPicker(
            rng=rng,
            reuse_limit=campaign.gold_reuse_limit,
            make_key=_key_function(direction),
            positives_by_query=_positives_by_query(direction=direction, queries=queries, index=index, rng=rng),
            all_positives=originals,
            candidate_keys=candidate_keys,
            negative_targets=index.ids(DIRECTION_SPACES[direction][1]),
            excluded_keys=excluded,
            original_keys=set(originals.tolist()),
            uses=uses,
        )
        filler = np.array(sorted(packed_candidates), dtype=np.int64)
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
            )
        except PackingError as error:
            raise ApplicationError(str(error)) from error
        uses = picker.uses
        packed_candidates.update(fresh_keys.tolist())
        for items in hits:
            for key, role, _query in items:
                if role != CANDIDATE and key not in existing and key not in new_pair_meta:
                    new_pair_keys.append(key)
                    new_pair_meta[key] = (direction, _gold_query(direction, key))
            hits_plan.append((direction, items))
        report.append(
            {"direction": direction, "proposals": pool.proposals, "new_pairs": int(len(fresh_keys)), "hits": len(hits)}
        )

    timings["pack"] = time.perf_counter() - clock
    clock = time.perf_counter()
    # Pairs, in a stable order, then their sources, HITs and items.
    key_array = np.array(new_pair_keys, dtype=np.int64)
    fields = _pair_fields(kind=kind, keys=key_array, index=index)
    pair_rows = [
        {
            "campaign_id": campaign.pk,
            "kind": kind,
            "direction": new_pair_meta[key][0],
            "query_id": new_pair_meta[key][1],
            **f,
        }
        for key, f in zip(new_pair_keys, fields, strict=True)
    ]
    pair_id = dict(existing)
    pair_id.update(zip(new_pair_keys, _insert_rows(Pair, pair_rows), strict=True))
    source_rows = [
        {"pair_id": pair_id[key], "run_id": run, "direction": direction, "rank": rank, "score": score}
        for key, run, direction, rank, score in sources
    ]
    if existing:  # pairs already there may have this run's provenance from before
        PairSource.objects.bulk_create(
            [PairSource(**row) for row in source_rows], batch_size=BATCH_SIZE, ignore_conflicts=True
        )
    else:
        _insert_rows(PairSource, source_rows, ids=False)
    now = timezone.now()
    hit_rows = [
        {
            "campaign_id": campaign.pk,
            "index": next_index + i,
            "stage": direction,
            "assignments_required": campaign.redundancy,
            "has_room": True,
            "created_at": now,
        }
        for i, (direction, _items) in enumerate(hits_plan)
    ]
    hit_ids = _insert_rows(Hit, hit_rows)
    item_rows = [
        {"hit_id": hit_id, "position": position, "pair_id": pair_id[key], "role": role}
        for hit_id, (_direction, items) in zip(hit_ids, hits_plan, strict=True)
        for position, (key, role, _query) in enumerate(items, start=1)
    ]
    _insert_rows(HitItem, item_rows, ids=False)
    hit_objects = hit_ids
    timings["write"] = time.perf_counter() - clock
    return {
        "stages": report,
        "new_pairs": len(new_pair_keys),
        "new_hits": len(hit_objects),
        "timings": {name: round(seconds, 3) for name, seconds in timings.items()},
    }


def _existing_keys_with_role(campaign: Campaign, existing: dict[int, int], *, roles: list[str]) -> list[int]:
    key_of = {pk: key for key, pk in existing.items()}
    ids = HitItem.objects.filter(hit__campaign=campaign, role__in=roles).values_list("pair_id", flat=True).distinct()
    return [key_of[pk] for pk in ids if pk in key_of]


# ---------------------------------------------------------------------------------------------- bulk writes


def _column_defaults(model) -> dict:
    """Values for the model's columns a row does not give: each field's default, `now` for auto dates."""
    defaults = {}
    now = timezone.now()
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            defaults[field.attname] = now
        else:
            defaults[field.attname] = field.get_default()  # "" for a blank CharField, None for a nullable one
    return defaults


def _copy_value(value) -> str:
    """One value in PostgreSQL's COPY text format."""
    if value is None:
        return "\\N"
    if value is True or value is False:
        return "t" if value else "f"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict | list):
        value = json.dumps(value)
    elif hasattr(value, "isoformat"):
        value = value.isoformat()
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _insert_rows(model, rows: list[dict], *, ids: bool = True) -> list[int]:
    """Insert `rows` (attname -> value) and return their new primary keys in order when `ids`.

    On PostgreSQL the ids are drawn from the table's sequence and the rows go in with COPY, which is an
    order of magnitude faster than bulk_create at ECCV sizes (tens of thousands of rows); elsewhere
    (SQLite, the embedded default) this is bulk_create in batches.
    """
    if not rows:
        return []
    if connection.vendor != "postgresql":
        objects = [model(**row) for row in rows]
        for start in range(0, len(objects), BATCH_SIZE):
            model.objects.bulk_create(objects[start : start + BATCH_SIZE])
        return [obj.pk for obj in objects]
    table = model._meta.db_table
    pk_column = model._meta.pk.column
    defaults = _column_defaults(model)
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = [f.attname for f in fields]
    db_columns = [f.column for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, pk_column, len(rows)],
        )
        new_ids = [row[0] for row in cursor.fetchall()]
        # Columns no row gives are the same text on every line; format them once.
        given = [name for name in columns if name in rows[0]]
        constant = {name: _copy_value(defaults[name]) for name in columns if name not in rows[0]}
        lines = []
        for pk, row in zip(new_ids, rows, strict=True):
            text = {name: _copy_value(row[name]) for name in given}
            lines.append("\t".join([str(pk), *(text[name] if name in text else constant[name] for name in columns)]))
        buffer = io.StringIO("\n".join(lines) + "\n")
        quoted = ", ".join(connection.ops.quote_name(c) for c in [pk_column, *db_columns])
        cursor.cursor.copy_expert(f"COPY {connection.ops.quote_name(table)} ({quoted}) FROM STDIN", buffer)
    return new_ids if ids else []


# ---------------------------------------------------------------------------------------------- build


def _fingerprint(campaign: Campaign, run_ids: list[int]) -> str:
    data = {field: getattr(campaign, field) for field in BUILD_FIELDS}
    data["runs"] = sorted(run_ids)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _lock(campaign: Campaign) -> Campaign:
    return Campaign.objects.select_for_update().get(pk=campaign.pk)


def _build_up_to_date(campaign: Campaign, run_ids: list[int]) -> bool:
    return campaign.status == CampaignStatus.BUILT and campaign.build_report.get("fingerprint") == _fingerprint(
        campaign, run_ids
    )


# A queued build that no worker holds after this long was lost (its worker died, or the task was dropped):
# its requester may queue it again.
BUILD_STALE_AFTER = timezone.timedelta(minutes=10)


def campaign_build_stalled(*, campaign: Campaign, now=None) -> bool:
    """Whether a `building` campaign has waited BUILD_STALE_AFTER since it was queued. Whether a worker is
    building it right now is known only under the row lock (campaign_build_request checks that)."""
    now = now or timezone.now()
    requested = campaign.build_requested_at
    return campaign.status == CampaignStatus.BUILDING and (requested is None or requested <= now - BUILD_STALE_AFTER)


def _lock_unless_building(campaign: Campaign) -> Campaign:
    """The campaign's row lock, without waiting: a build under way holds that lock for as long as it runs, so
    a row that cannot be locked at once is one a worker is building (409)."""
    queryset = Campaign.objects.filter(pk=campaign.pk)
    if connection.features.has_select_for_update_skip_locked:
        queryset = queryset.select_for_update(skip_locked=True)
    locked = queryset.first()
    if locked is None:
        if Campaign.objects.filter(pk=campaign.pk).exists():
            raise ApplicationError("This campaign is being built right now; wait for the build to finish.", status=409)
        raise ApplicationError("No such campaign.", status=404)
    return locked


def _build_check(campaign: Campaign) -> list[int]:
    """What a build can check cheaply before it starts: the state, the runs and the options. Returns the
    run ids. A campaign queued for building is a 409 of its own (the build is under way, not a wrong move),
    unless it stalled (campaign_build_stalled): then it may be queued again."""
    if campaign.status == CampaignStatus.BUILDING and not campaign_build_stalled(campaign=campaign):
        raise ApplicationError("This campaign is being built already; wait for the build to finish.", status=409)
    if campaign.status not in (CampaignStatus.BUILT, CampaignStatus.BUILDING):
        check_transition(
            transitions=CAMPAIGN_TRANSITIONS, current=campaign.status, target=CampaignStatus.BUILDING, what="campaign"
        )
    runs = list(campaign.runs.order_by("pk"))
    _check_runs(dataset=campaign.dataset, runs=runs)
    _check_options(campaign=campaign, runs=runs)
    return [run.pk for run in runs]


def _build_locked(campaign: Campaign, run_ids: list[int]) -> None:
    """Delete the campaign's pairs and HITs and build them again; the campaign becomes `built`. The caller
    holds the campaign's row lock inside a transaction; an ApplicationError rolls everything back."""
    started = time.perf_counter()
    HitItem.objects.filter(hit__campaign=campaign).delete()
    Hit.objects.filter(campaign=campaign).delete()
    Pair.objects.filter(campaign=campaign).delete()

    index = _DatasetIndex(campaign.dataset_id)
    stages = []
    for stage_no, direction in enumerate(STAGES[campaign.direction]):
        universe = _load_query_universe(run_ids=run_ids, direction=direction)
        if len(universe) == 0:
            raise ApplicationError(f"The chosen runs have no {direction} candidates for this campaign.")
        sampled = sample_queries(
            universe,
            count=campaign.sample_count,
            fraction=campaign.sample_fraction,
            rng=_stage_rng(campaign, 1, stage_no),
        )
        if len(sampled) == 0:
            raise ApplicationError("The query sample is empty: raise the sample count or fraction.")
        order = _stage_rng(campaign, 1, stage_no, 1).permutation(sampled)
        stages.append({"direction": direction, "queries": [int(q) for q in order]})
    result = _extend(campaign=campaign, stages=stages, pool_run_ids=run_ids, all_run_ids=run_ids, index=index, salt=0)
    campaign.status = CampaignStatus.BUILT
    campaign.built_at = timezone.now()
    campaign.build_error = ""
    campaign.build_report = {
        "fingerprint": _fingerprint(campaign, run_ids),
        "stages": [
            {**stage, **counts, "query_count": len(stage["queries"])}
            for stage, counts in zip(stages, result["stages"], strict=True)
        ],
        "added_runs": [],
        "timings": result["timings"],
    }
    campaign.save(update_fields=["status", "built_at", "build_error", "build_report"])
    _refresh_report(campaign, seconds=time.perf_counter() - started)


def campaign_build(*, campaign: Campaign) -> Campaign:
    """Pool the campaign's runs, choose gold, pack HITs, here and now; the campaign becomes `built`.

    For the command line (`manage.py build_campaign`) and the demo; pages and the API queue the build
    with campaign_build_request instead, because a large build outlives an HTTP request. Runs in one
    transaction under SELECT ... FOR UPDATE on the campaign row, so two concurrent builds serialise and
    nobody ever sees it `building`. Idempotent: a built campaign whose build options and runs have not
    changed since is returned untouched; otherwise its pairs and HITs are deleted and built again.
    Reproducible: the same options, runs and seed give the same pairs, HITs, items and positions. `both`
    builds two stages, the image-to-caption HITs first, then the caption-to-image HITs (a pair proposed in
    both directions is asked once, in the first stage, and keeps the provenance of both). Raises
    ApplicationError (the campaign unchanged); refused (409) while building and once launched.
    """
    with transaction.atomic():
        campaign = _lock(campaign)
        run_ids = _build_check(campaign)
        if _build_up_to_date(campaign, run_ids):
            return campaign
        _build_locked(campaign, run_ids)
    return campaign


def campaign_build_request(*, campaign: Campaign) -> Campaign:
    """Queue the build of `campaign` on Celery: draft or built -> building, answered at once.

    Checks what is cheap first (the state, the runs, the options: ApplicationError 400, or 409 for a
    campaign building already or launched), then marks the campaign `building` under SELECT ... FOR UPDATE
    SKIP LOCKED on its row (a build under way holds that lock, and of two requests at once one queues and
    the other gets the 409; neither waits) and enqueues
    `workers.tasks.campaigns.campaign_build_task` after commit. The task builds it (campaign_build_run):
    `built`, or back to `draft` with the reason in build_error. Idempotent for a built campaign whose
    options and runs have not changed: returned unchanged, nothing queued. A build queued more than
    BUILD_STALE_AFTER ago that no worker holds (its worker died, the task was lost) is queued again; a
    duplicate that arrives late does nothing (campaign_build_run). Returns the campaign as it is
    then (already built, or failed, when Celery runs eagerly, the embedded default).
    """
    with transaction.atomic():
        campaign = _lock_unless_building(campaign)
        run_ids = _build_check(campaign)
        if _build_up_to_date(campaign, run_ids):
            return campaign
        campaign.status = CampaignStatus.BUILDING
        campaign.build_error = ""
        campaign.build_requested_at = timezone.now()
        campaign.save(update_fields=["status", "build_error", "build_requested_at"])
    try:
        enqueue_on_commit(CAMPAIGN_BUILD_TASK, campaign.pk)  # after the block: sent now, outside a transaction
    except Exception as exc:  # a broker that is down
        logger.exception("could not queue the build of campaign %s", campaign.pk)
        _build_failed(campaign_id=campaign.pk, message=f"The build could not be queued: {exc}")
        raise ApplicationError("The build could not be queued; try again in a minute.", status=503) from exc
    campaign.refresh_from_db()
    return campaign


def _build_failed(*, campaign_id: int, message: str) -> None:
    """building -> draft with `message` in build_error (a campaign no longer building is left alone)."""
    Campaign.objects.filter(pk=campaign_id, status=CampaignStatus.BUILDING).update(
        status=CampaignStatus.DRAFT, build_error=message
    )


def campaign_build_run(*, campaign_id: int) -> str:
    """Build the campaign `campaign_id` queued by campaign_build_request; the body of the Celery task.
    Returns the campaign's status afterwards ("missing" when it is gone).

    Takes SELECT ... FOR UPDATE SKIP LOCKED on the campaign row and builds inside that transaction, so a
    duplicated or redelivered task does nothing: it finds the row locked by the build under way, or the
    campaign no longer `building` (built, failed back to draft). Never raises for a failed build: the
    transaction rolls back (pairs and HITs as they were) and the campaign goes back to `draft` with the
    reason in build_error, which the campaign page and the API show.
    """
    try:
        with transaction.atomic():
            campaign = Campaign.objects.select_for_update(skip_locked=True).filter(pk=campaign_id).first()
            if campaign is not None and campaign.status == CampaignStatus.BUILDING:
                runs = list(campaign.runs.order_by("pk"))
                _check_runs(dataset=campaign.dataset, runs=runs)  # again: a run may have changed since the request
                _check_options(campaign=campaign, runs=runs)
                _build_locked(campaign, [run.pk for run in runs])
    except ApplicationError as error:
        _build_failed(campaign_id=campaign_id, message=error.message)
    except Exception as exc:
        logger.exception("the build of campaign %s failed", campaign_id)
        _build_failed(campaign_id=campaign_id, message=f"The build stopped: {type(exc).__name__}: {exc}")
    return Campaign.objects.filter(pk=campaign_id).values_list("status", flat=True).first() or "missing"


def _refresh_report(campaign: Campaign, *, seconds: float | None = None) -> None:
    from annotator.selectors.campaigns import campaign_statistics

    stats = campaign_statistics(campaign=campaign, include_progress=False)
    report = dict(campaign.build_report)
    report["statistics"] = stats
    if seconds is not None:
        report["build_seconds"] = round(seconds, 3)
    campaign.build_report = report
    campaign.save(update_fields=["build_report"])


def campaign_add_run(*, campaign: Campaign, run: RankingRun) -> Campaign:
    """Add another annotator's run to a built, live or paused campaign.

    Only pairs not already in the campaign become new pairs; they are packed into new HITs (with gold,
    same composition) appended after the existing ones, over the same sampled queries. Pairs already
    there gain the run's provenance (PairSource). Takes SELECT ... FOR UPDATE on the campaign row.
    Idempotent: adding a run that is already part of the campaign changes nothing.
    """
    started = time.perf_counter()
    with transaction.atomic():
        campaign = _lock(campaign)
        if campaign.status not in (CampaignStatus.BUILT, CampaignStatus.LIVE, CampaignStatus.PAUSED):
            raise ApplicationError(
                f"Runs can be added to a built, live or paused campaign; this one is {campaign.status}.", status=409
            )
        _check_runs(dataset=campaign.dataset, runs=[run])
        if campaign.runs.filter(pk=run.pk).exists():
            return campaign
        runs = [*campaign.runs.order_by("pk"), run]
        _check_options(campaign=campaign, runs=runs)
        stages = [
            {"direction": stage["direction"], "queries": stage["queries"]}
            for stage in campaign.build_report.get("stages", [])
        ]
        if not stages:
            raise ApplicationError("Build the campaign before adding runs.", status=409)
        campaign.runs.add(run)
        result = _extend(
            campaign=campaign,
            stages=stages,
            pool_run_ids=[run.pk],
            all_run_ids=[r.pk for r in runs],
            index=_DatasetIndex(campaign.dataset_id),
            salt=run.pk,
        )
        report = dict(campaign.build_report)
        report["fingerprint"] = _fingerprint(campaign, [r.pk for r in runs])
        report["added_runs"] = [*report.get("added_runs", []), {"run": run.pk, **result}]
        campaign.build_report = report
        campaign.save(update_fields=["build_report"])
        _refresh_report(campaign, seconds=time.perf_counter() - started)
    return campaign


# ---------------------------------------------------------------------------------------------- states


def _move(*, campaign: Campaign, target: str, sources: tuple[str, ...] | None = None, **fields) -> Campaign:
    """Move the campaign to `target` under a row lock; a campaign already there is returned unchanged.

    `sources` narrows the transition table (launch only from built, resume only from paused); fields that
    are still None are set (launched_at keeps the first launch).
    """
    with transaction.atomic():
        campaign = _lock(campaign)
        if campaign.status == target:
            return campaign
        check_transition(transitions=CAMPAIGN_TRANSITIONS, current=campaign.status, target=target, what="campaign")
        if sources is not None and campaign.status not in sources:
            raise ApplicationError(f"A campaign that is {campaign.status} cannot become {target} this way.", status=409)
        if target == CampaignStatus.LIVE and not Hit.objects.filter(campaign=campaign).exists():
            raise ApplicationError("This campaign has no HITs; build it first.", status=409)
        campaign.status = target
        for name, value in fields.items():
            if getattr(campaign, name) is None:
                setattr(campaign, name, value)
        campaign.save(update_fields=["status", *fields])
    return campaign


def campaign_launch(*, campaign: Campaign) -> Campaign:
    """built -> live: workers can claim its HITs. Locks the campaign row (SELECT ... FOR UPDATE);
    launching a live campaign is a no-op; any other state is refused with 409."""
    return _move(
        campaign=campaign, target=CampaignStatus.LIVE, sources=(CampaignStatus.BUILT,), launched_at=timezone.now()
    )


def campaign_pause(*, campaign: Campaign) -> Campaign:
    """live -> paused: no new claims (leases already held may still be submitted). Locks the campaign row;
    idempotent for a paused campaign; other states 409."""
    return _move(campaign=campaign, target=CampaignStatus.PAUSED)


def campaign_resume(*, campaign: Campaign) -> Campaign:
    """paused -> live. Locks the campaign row; a live campaign is returned unchanged; a built (never
    launched: use launch) or finished campaign is refused with 409."""
    return _move(campaign=campaign, target=CampaignStatus.LIVE, sources=(CampaignStatus.PAUSED,))


def campaign_finish(*, campaign: Campaign) -> Campaign:
    """live or paused -> finished: no more work is handed out; the HITs and answers stay for review and
    export. Locks the campaign row; idempotent for a finished campaign; draft or built 409."""
    return _move(campaign=campaign, target=CampaignStatus.FINISHED)
