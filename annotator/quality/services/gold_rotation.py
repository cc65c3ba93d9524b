"""Retiring HIT gold that has been seen too much, and putting fresh gold in its place.

A gold pair sits in up to gold_reuse_limit HITs, each answered by `redundancy` workers. Once
campaign.gold_max_exposure workers have seen it, or workers who had seen it before answer it right
clearly more often than first-time viewers (annotator.analysis.gold_exposure.learned_signal), it is
retired: in every HIT that nobody has opened yet (no assignment of any status) its item gets a fresh gold
pair of the same role, never seen by anyone, drawn like the build draws gold (an original pair of the
HIT's own images or captions for a positive; a pair outside every annotator's top gold_exclusion_depth
for a negative). HITs already opened keep the pair: their answers are about it. The requester sees each
retirement on the campaign page; each is an audit event.
"""

from __future__ import annotations

import random

from django.db import transaction

from annotator.analysis.gold import gold_choice_right, gold_score_right
from annotator.analysis.gold_exposure import GoldAnswer, learned_signal
from annotator.campaigns.models.campaign import Campaign, Hit, HitItem, ItemRole, Pair, PairKind, Scale
from annotator.campaigns.models.gold import GoldRetirement, GoldRetirementReason
from annotator.campaigns.selectors.gold_exposure import GOLD_ROLES, gold_views
from annotator.campaigns.services.qualification_pool import (
    pair_key,
    pair_key_of,
    qualification_pool_keys,
    ranked_keys,
)
from annotator.core.models.audit import AuditAction
from annotator.core.services.audit import audit_record
from annotator.crowd.models.crowd import Answer
from annotator.datasets.models.dataset import Caption, Image

DRAWS = 200


def _is_right(*, campaign: Campaign, role: str, answer: Answer) -> bool:
    if campaign.scale == Scale.SIMILARITY:
        return bool(gold_score_right(role=role, score=answer.score, threshold=campaign.similarity_gold_threshold))
    return bool(gold_choice_right(role=role, choice=answer.choice, strict=campaign.strict_gold))


def _learned(*, campaign: Campaign, pair_ids: list[int], views) -> dict[int, dict]:
    """pair id -> the learned signal's numbers, for the pairs where it fires."""
    first_view: dict[tuple[int, int], int] = {}  # (worker, pair) -> first assignment id that showed it
    for worker_id, pair_id, _hit, assignment_id in views:
        first_view.setdefault((worker_id, pair_id), assignment_id)
    answers = Answer.objects.filter(
        item__pair_id__in=pair_ids, item__role__in=GOLD_ROLES, assignment__submitted_at__isnull=False
    ).select_related("item", "assignment")
    by_pair: dict[int, list[GoldAnswer]] = {}
    for answer in answers:
        pair_id = answer.item.pair_id
        worker_id = answer.assignment.worker_id
        seen_before = first_view.get((worker_id, pair_id), answer.assignment_id) != answer.assignment_id
        right = _is_right(campaign=campaign, role=answer.item.role, answer=answer)
        by_pair.setdefault(pair_id, []).append(GoldAnswer(worker_id, right, seen_before))
    result = {}
    for pair_id, rows in by_pair.items():
        signal = learned_signal(rows)
        if signal is not None:
            result[pair_id] = {
                "first_accuracy": round(signal.first_accuracy, 3),
                "repeat_accuracy": round(signal.repeat_accuracy, 3),
                "first_answers": signal.first_answers,
                "repeat_answers": signal.repeat_answers,
            }
    return result


class _Replacements:
    """Draws fresh gold pairs for one campaign: never a pair of the campaign, its pool or an earlier draw."""

    def __init__(self, campaign: Campaign):
        self.campaign = campaign
        self.used = {pair_key_of(p) for p in Pair.objects.filter(campaign=campaign).only(*_KEY_FIELDS)}
        self.used |= qualification_pool_keys(campaign=campaign)
        self.run_ids = list(campaign.runs.values_list("pk", flat=True))
        self.image_of = dict(Caption.objects.filter(dataset_id=campaign.dataset_id).values_list("pk", "image_id"))
        self.captions_of: dict[int, list[int]] = {}
        for caption_id, image_id in sorted(self.image_of.items()):
            self.captions_of.setdefault(image_id, []).append(caption_id)
        self.images = sorted(Image.objects.filter(dataset_id=campaign.dataset_id).values_list("pk", flat=True))
        self.captions = sorted(self.image_of)

    def _fresh(self, kind: str, first: int, second: int) -> int | None:
        key = pair_key(kind, first, second)
        return None if key in self.used else key

    def positive(self, *, kind: str, hit_pairs: list[Pair], rng: random.Random) -> int | None:
        if kind == PairKind.IMAGE_IMAGE:
            return None
        options = []
        for pair in hit_pairs:
            if kind == PairKind.IMAGE_CAPTION:
                options += [(pair.image_id, c) for c in self.captions_of.get(pair.image_id, [])]
                own = self.image_of.get(pair.caption_id)
                options += [(own, c) for c in self.captions_of.get(own, [])] if own else []
            else:
                for caption in (pair.caption_id, pair.other_caption_id):
                    own = self.image_of.get(caption)
                    options += [(caption, c) for c in self.captions_of.get(own, []) if c != caption]
        rng.shuffle(options)
        for first, second in options:
            if (key := self._fresh(kind, first, second)) is not None:
                return key
        for _ in range(DRAWS):  # any original pair of the dataset, as the build's fallback
            caption = rng.choice(self.captions)
            if kind == PairKind.IMAGE_CAPTION:
                key = self._fresh(kind, self.image_of[caption], caption)
            else:
                partners = [c for c in self.captions_of[self.image_of[caption]] if c != caption]
                key = self._fresh(kind, caption, rng.choice(partners)) if partners else None
            if key is not None:
                return key
        return None

    def negative(self, *, kind: str, stage: str, hit_pairs: list[Pair], rng: random.Random) -> int | None:
        draws = []
        for _ in range(DRAWS):
            pair = rng.choice(hit_pairs)
            if kind == PairKind.IMAGE_CAPTION:
                if stage == "t2i":
                    first, second = rng.choice(self.images), pair.caption_id
                else:
                    first, second = pair.image_id, rng.choice(self.captions)
                if self.image_of.get(second) == first:
                    continue
            elif kind == PairKind.CAPTION_CAPTION:
                first, second = pair.caption_id, rng.choice(self.captions)
                if self.image_of.get(first) == self.image_of.get(second):
                    continue
            else:
                first, second = pair.image_id, rng.choice(self.images)
                if first == second:
                    continue
            key = self._fresh(kind, first, second)
            if key is not None and key not in draws:
                draws.append(key)
        ranked = ranked_keys(
            run_ids=self.run_ids,
            kind=kind,
            firsts={k >> 32 for k in draws},
            seconds={k & ((1 << 32) - 1) for k in draws},
            max_rank=self.campaign.gold_exclusion_depth,
            directions={stage},
        )
        return next((k for k in draws if k not in ranked), None)

    def create(self, *, kind: str, key: int, stage: str, original: bool) -> Pair:
        first, second = key >> 32, key & ((1 << 32) - 1)
        members = {
            PairKind.IMAGE_CAPTION: {"image_id": first, "caption_id": second},
            PairKind.CAPTION_CAPTION: {"caption_id": first, "other_caption_id": second},
            PairKind.IMAGE_IMAGE: {"image_id": first, "other_image_id": second},
        }[kind]
        self.used.add(key)
        return Pair.objects.create(campaign=self.campaign, kind=kind, is_original=original, direction=stage, **members)


_KEY_FIELDS = ("kind", "image_id", "caption_id", "other_image_id", "other_caption_id")


def _replace_in_unopened_hits(*, campaign: Campaign, pair_id: int, draws: _Replacements) -> list[list[int]]:
    """Give every unopened HIT holding `pair_id` a fresh gold pair in its place; [(hit id, new pair id)].

    Locks each such Hit row (FOR UPDATE) and checks under the lock that it still has no assignment: a
    claim inserts its assignment while holding that lock, so a HIT is never changed under a worker.
    """
    replaced = []
    items = HitItem.objects.filter(hit__campaign=campaign, pair_id=pair_id, role__in=GOLD_ROLES).order_by("hit_id")
    for item in items:
        hit = Hit.objects.select_for_update().get(pk=item.hit_id)
        if hit.assignments.exists():
            continue
        hit_pairs = [
            i.pair
            for i in HitItem.objects.filter(hit=hit, role=ItemRole.CANDIDATE)
            .select_related("pair")
            .order_by("position")
        ]
        if not hit_pairs:
            continue
        rng = random.Random(f"gold-rotation:{campaign.seed}:{pair_id}:{hit.pk}")
        kind = item.pair.kind
        if item.role == ItemRole.GOLD_POSITIVE:
            key = draws.positive(kind=kind, hit_pairs=hit_pairs, rng=rng)
        else:
            key = draws.negative(kind=kind, stage=hit.stage, hit_pairs=hit_pairs, rng=rng)
        if key is None:
            continue  # nothing fresh left to draw: the HIT keeps its pair
        new_pair = draws.create(kind=kind, key=key, stage=hit.stage, original=item.role == ItemRole.GOLD_POSITIVE)
        HitItem.objects.filter(pk=item.pk).update(pair=new_pair)
        replaced.append([hit.pk, new_pair.pk])
    return replaced


def gold_rotate(*, campaign: Campaign, pair_ids: list[int] | None = None) -> list[GoldRetirement]:
    """Retire the campaign's over-exposed or learned gold pairs (of `pair_ids`, or all) and replace them in
    the HITs nobody has opened. Returns the retirements made now.

    Takes SELECT ... FOR UPDATE on the campaign row (rotations of one campaign run one at a time), then on
    each HIT it changes. Idempotent: a retired pair is never retired again (unique per campaign and pair).
    """
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
        retired = set(GoldRetirement.objects.filter(campaign=campaign).values_list("pair_id", flat=True))
        views = gold_views(campaign=campaign, pair_ids=pair_ids)
        workers: dict[int, set[int]] = {}
        for worker_id, pair_id, _hit, _assignment in views:
            workers.setdefault(pair_id, set()).add(worker_id)
        candidates = [p for p in (pair_ids if pair_ids is not None else list(workers)) if p not in retired]
        learned = _learned(campaign=campaign, pair_ids=candidates, views=views) if candidates else {}
        unopened = set(
            HitItem.objects.filter(hit__campaign=campaign, pair_id__in=candidates, role__in=GOLD_ROLES)
            .exclude(hit__assignments__isnull=False)
            .values_list("pair_id", flat=True)
        )
        made = []
        draws = None
        roles = dict(
            HitItem.objects.filter(hit__campaign=campaign, pair_id__in=candidates, role__in=GOLD_ROLES).values_list(
                "pair_id", "role"
            )
        )
        for pair_id in sorted(candidates):
            exposure = len(workers.get(pair_id, ()))
            if pair_id in learned:
                reason, detail = GoldRetirementReason.LEARNED, learned[pair_id]
            elif exposure >= campaign.gold_max_exposure and pair_id in unopened:
                reason, detail = GoldRetirementReason.EXPOSED, {}
            else:
                continue
            draws = draws or _Replacements(campaign)
            replaced = _replace_in_unopened_hits(campaign=campaign, pair_id=pair_id, draws=draws)
            retirement = GoldRetirement.objects.create(
                campaign=campaign,
                pair_id=pair_id,
                role=roles.get(pair_id, ""),
                reason=reason,
                exposure=exposure,
                detail=detail,
                replaced_in=replaced,
            )
            audit_record(
                action=AuditAction.GOLD_RETIRE,
                campaign=campaign,
                detail={"pair": pair_id, "reason": reason, "exposure": exposure, "replaced_in": replaced},
            )
            made.append(retirement)
        return made


def gold_rotate_for_hit(*, hit_id: int) -> list[GoldRetirement]:
    """gold_rotate for the gold pairs of one HIT (after one of its assignments was scored)."""
    hit = Hit.objects.select_related("campaign").filter(pk=hit_id).first()
    if hit is None:
        return []
    pair_ids = list(HitItem.objects.filter(hit_id=hit_id, role__in=GOLD_ROLES).values_list("pair_id", flat=True))
    return gold_rotate(campaign=hit.campaign, pair_ids=pair_ids) if pair_ids else []
