"""Adaptive redundancy: follow-up HITs for the pairs whose posterior is not settled yet.

A pair is *settled* when its working posterior (annotator.quality.selectors.posterior, every scored answer not
rejected) is at least campaign.settle_probability on one side, with at least campaign.settle_min_answers
answers (the machine prior counts as one when the campaign uses it). A pair that is not settled, has fewer than
campaign.max_answers_per_pair answers and none on the way (no open slot on a HIT that holds it) goes into
a follow-up HIT: the unsettled pairs are packed candidates_per_hit at a time (a short last HIT of fewer than
half waits while other follow-ups are under way, to be packed with their leftovers), and every HIT gets
the campaign's gold: the least used gold pairs, then pairs the crowd settled unanimously (at
least three answers, P >= 0.99 on one side), promoted to gold; `gold_light_share` of them are gold-light (one
gold item and one more unsettled pair, the same size, as at build time). Promoted gold is never a qualification item
(qualification tests draw from their own pool, never from HIT gold). A follow-up
HIT asks for one assignment; claims never give a worker a HIT with a pair they have answered before, so the
unsettled pairs are packed by the HITs that held them (`_claimable_order`): a follow-up of pairs from one or two
earlier HITs is closed only to those HITs' workers, where one of pairs from every HIT would be closed to the whole
crowd that worked them, and a small crowd could not finish the campaign.

Compared with fixed redundancy, the answers go where the crowd disagrees: pairs that two careful workers
(or one worker and a confident machine prior) agree on stop at two.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from django.db import transaction
from django.db.models import Count, Max

from annotator.analysis.packing import is_gold_light, light_gold_roles
from annotator.campaigns.models.campaign import (
    Campaign,
    CampaignStatus,
    Hit,
    HitItem,
    HitStatus,
    ItemRole,
)
from annotator.quality.selectors.redundancy import pair_states

PROMOTE_MIN_ANSWERS = 3
PROMOTE_PROBABILITY = 0.99


def _gold_for_followups(campaign: Campaign, states: dict[int, dict]) -> tuple[list[int], list[int]]:
    """Gold pairs for follow-up HITs, least used first: (positives, negatives). The campaign's gold, then
    candidate pairs the crowd settled unanimously (promoted)."""
    uses = dict(
        HitItem.objects.filter(hit__campaign=campaign, role__in=[ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE])
        .values("pair_id")
        .annotate(n=Count("pk"))
        .values_list("pair_id", "n")
    )
    roles = dict(
        HitItem.objects.filter(hit__campaign=campaign, role__in=[ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE])
        .values_list("pair_id", "role")
        .distinct()
    )
    positives = [p for p, role in roles.items() if role == ItemRole.GOLD_POSITIVE]
    negatives = [p for p, role in roles.items() if role == ItemRole.GOLD_NEGATIVE]
    for pair_id, state in states.items():
        if pair_id in roles or state["answers"] < PROMOTE_MIN_ANSWERS or not state["settled"]:
            continue
        if state["probability"] >= PROMOTE_PROBABILITY:
            positives.append(pair_id)
        elif state["probability"] <= 1 - PROMOTE_PROBABILITY:
            negatives.append(pair_id)
    positives.sort(key=lambda p: (uses.get(p, 0), p))
    negatives.sort(key=lambda p: (uses.get(p, 0), p))
    return positives, negatives


def _claimable_order(campaign: Campaign, needy: list[int]) -> list[int]:
    """The unsettled pairs in packing order: grouped by the HITs that held them as candidates (pairs that went
    through the same HITs were answered by the same workers), so each follow-up HIT excludes as few workers as
    it can; pair id within a group."""
    held: dict[int, list[int]] = {}
    for pair_id, hit_id in HitItem.objects.filter(
        hit__campaign=campaign, role=ItemRole.CANDIDATE, pair_id__in=needy
    ).values_list("pair_id", "hit_id"):
        held.setdefault(pair_id, []).append(hit_id)
    return sorted(needy, key=lambda pair_id: (sorted(held.get(pair_id, [])), pair_id))


def _viewers(campaign: Campaign, pair_ids) -> dict[int, set[int]]:
    """Per pair: the workers who were shown it (an assignment of any status on a HIT that holds it), whom a claim
    never gives a HIT holding it again."""
    seen: dict[int, set[int]] = {}
    for pair_id, worker_id in HitItem.objects.filter(
        hit__campaign=campaign, pair_id__in=list(pair_ids), hit__assignments__isnull=False
    ).values_list("pair_id", "hit__assignments__worker_id"):
        seen.setdefault(pair_id, set()).add(worker_id)
    return seen


def followups_plan(*, campaign: Campaign) -> dict:
    """Create the follow-up HITs the campaign's unsettled pairs need (see the module docstring).

    Locks the Campaign row (SELECT ... FOR UPDATE), so two planners cannot pack the same pairs twice.
    Idempotent: a pair with an answer on the way is not packed again, so running it again before the
    follow-ups are answered creates nothing. Only live or paused campaigns with adaptive redundancy.
    Returns {"hits": created, "pairs": pairs asked again, "settled": settled pairs, "unsettled": ...}.
    """
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if not campaign.adaptive_redundancy or campaign.status not in (CampaignStatus.LIVE, CampaignStatus.PAUSED):
            return {}
        states = pair_states(campaign=campaign)
        settled = [p for p, s in states.items() if s["settled"]]
        needy = _claimable_order(
            campaign,
            [
                p
                for p, s in states.items()
                if not s["settled"] and s["waiting"] == 0 and s["answers"] < campaign.max_answers_per_pair
            ],
        )
        report = {"hits": 0, "pairs": len(needy), "settled": len(settled), "unsettled": len(states) - len(settled)}
        if not needy:
            return report
        per_hit = campaign.candidates_per_hit
        full_gold = campaign.gold_positives_per_hit + campaign.gold_negatives_per_hit
        chunks, lights, start = [], [], 0
        while start < len(needy):
            light = full_gold >= 2 and is_gold_light(campaign.gold_light_share, len(chunks))
            size = per_hit + (full_gold - 1 if light else 0)
            chunks.append(needy[start : start + size])
            lights.append(light)
            start += size
        if (
            len(chunks[-1]) < per_hit // 2
            and Hit.objects.filter(campaign=campaign, followup_round__gt=0, status=HitStatus.OPEN).exists()
        ):
            # A short tail waits for the follow-ups under way: the next plan packs it with their leftovers.
            report["pairs"] -= len(chunks.pop())
            lights.pop()
            if not chunks:
                return report
        positives, negatives = _gold_for_followups(campaign, states)
        last = Hit.objects.filter(campaign=campaign).aggregate(i=Max("index"), r=Max("followup_round"))
        index, round_number = (last["i"] or 0) + 1, (last["r"] or 0) + 1
        rng = np.random.default_rng([max(campaign.seed, 0), round_number])
        stage_of = dict(
            HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE, pair_id__in=needy).values_list(
                "pair_id", "hit__stage"
            )
        )
        viewers = _viewers(campaign, {*needy, *positives, *negatives})
        rank = {pair_id: k for k, pair_id in enumerate(positives + negatives)}  # least used first
        used_now: Counter = Counter()
        light_turn = 0
        for chunk, light in zip(chunks, lights, strict=True):
            hit = Hit.objects.create(
                campaign=campaign,
                index=index,
                stage=stage_of.get(chunk[0], "i2t"),
                assignments_required=1,
                followup_round=round_number,
                gold_light=light,
            )
            index += 1
            wants = (campaign.gold_positives_per_hit, campaign.gold_negatives_per_hit)
            if light:
                wants = light_gold_roles(n_positive=wants[0], n_negative=wants[1], number=light_turn)
                light_turn += 1
            gold = []
            closed = set().union(*(viewers.get(pair_id, set()) for pair_id in chunk))
            for pool, count, role in (
                (positives, wants[0], ItemRole.GOLD_POSITIVE),
                (negatives, wants[1], ItemRole.GOLD_NEGATIVE),
            ):
                for _ in range(count):
                    # Gold seen by nobody the chunk's pairs do not already shut out, then the least used.
                    usable = [p for p in pool if p not in chunk and p not in {g for g, _ in gold}]
                    if not usable:
                        break
                    pick = min(usable, key=lambda p: (len(viewers.get(p, set()) - closed), used_now[p], rank[p]))
                    gold.append((pick, role))
                    used_now[pick] += 1
                    closed |= viewers.get(pick, set())
            items = [(pair_id, ItemRole.CANDIDATE) for pair_id in chunk] + gold
            order = rng.permutation(len(items))
            HitItem.objects.bulk_create(
                [
                    HitItem(hit=hit, position=position, pair_id=items[k][0], role=items[k][1])
                    for position, k in enumerate(order.tolist(), start=1)
                ]
            )
            report["hits"] += 1
        return report
