"""Adaptive redundancy (annotator/services/campaigns/followups.py, annotator/selectors/redundancy.py): a settled
pair stops collecting answers, an unsettled one is asked again up to the cap, pairs the crowd settled
unanimously become gold of the follow-up HITs (never qualification items), and the requester sees the
answers saved."""

from collections import Counter

import pytest
from django.urls import reverse

from annotator.models import (
    Answer,
    AssignmentStatus,
    Hit,
    HitItem,
    ItemRole,
    QualificationItem,
)
from annotator.selectors.redundancy import FIXED_REDUNDANCY, campaign_redundancy
from annotator.services.campaigns.followups import followups_plan
from annotator.services.hits.qualification import qualification_start
from annotator.services.quality.scoring import assignment_score
from tests.annotator.quality_support import submit
from tests.factories import WorkerFactory, live_campaign_with_hits

pytestmark = pytest.mark.django_db

YES, SPLIT, NO = range(0, 4), range(4, 6), range(6, 8)  # candidate positions: unanimous yes, 2-1, unanimous no


def _campaign_answered_three_times(**options):
    """A live adaptive campaign, one HIT of 8 candidates answered by three workers (gold right): pairs 0-3
    "yes" from all, 4-5 "yes", "yes", "no", 6-7 "no" from all. Settled at 0.999: the unanimous pairs are
    (P about 0.99998 and 0.0007: the crowd got all its gold right and agrees, so the hierarchical prior trusts
    it), the two-to-one ones not (about 0.997). Returns (campaign, candidate pair ids)."""
    options.setdefault("settle_probability", 0.999)
    campaign = live_campaign_with_hits(
        hits=1, candidates=8, redundancy=3, adaptive_redundancy=True, qualification_items=2, **options
    )
    hit = campaign.hits.get()
    pairs = list(hit.items.filter(role=ItemRole.CANDIDATE).order_by("position").values_list("pair_id", flat=True))
    for worker_number in range(3):
        assignment = submit(hit, candidate="no")
        says_yes = [*YES, *SPLIT] if worker_number < 2 else list(YES)
        Answer.objects.filter(assignment=assignment, item__pair_id__in=[pairs[k] for k in says_yes]).update(
            choice="yes"
        )
        assignment_score(assignment_id=assignment.pk)
    return campaign, pairs


def test_only_unsettled_pairs_are_asked_again_with_promoted_gold_and_only_once():
    campaign, pairs = _campaign_answered_three_times()
    report = followups_plan(campaign=campaign)
    assert (report["hits"], report["pairs"], report["settled"], report["unsettled"]) == (1, 2, 6, 2)
    followup = Hit.objects.get(campaign=campaign, followup_round=1)
    assert followup.assignments_required == 1
    items = dict(followup.items.values_list("pair_id", "role"))
    assert sorted(p for p, role in items.items() if role == ItemRole.CANDIDATE) == sorted(pairs[k] for k in SPLIT)
    # Its gold: the least used first, so the pairs the crowd settled unanimously (never used as gold yet).
    gold = {role: p for p, role in items.items() if role != ItemRole.CANDIDATE}
    assert gold[ItemRole.GOLD_POSITIVE] in [pairs[k] for k in YES]
    assert gold[ItemRole.GOLD_NEGATIVE] in [pairs[k] for k in NO]
    assert followups_plan(campaign=campaign)["hits"] == 0  # their answers are on the way: nothing twice


def test_follow_ups_are_gold_light_by_the_campaigns_share_and_keep_the_hit_size():
    """Eight unsettled pairs, 4 candidates per HIT, share 0.5: a full HIT of 4 + 2 gold, then a gold-light one
    (room for 5 candidates and one gold item) holding the other 4."""
    campaign, pairs = _campaign_answered_three_times(settle_min_answers=4, gold_light_share=0.5)
    campaign.candidates_per_hit = 4
    campaign.save(update_fields=["candidates_per_hit"])
    assert followups_plan(campaign=campaign)["hits"] == 2  # 8 unsettled pairs: 4 in a full HIT, 4 in a light one
    first, second = Hit.objects.filter(campaign=campaign, followup_round=1).order_by("index")
    assert (first.gold_light, second.gold_light) == (False, True)
    roles = [Counter(hit.items.values_list("role", flat=True)) for hit in (first, second)]
    assert roles[0] == {ItemRole.CANDIDATE: 4, ItemRole.GOLD_POSITIVE: 1, ItemRole.GOLD_NEGATIVE: 1}
    assert roles[1][ItemRole.CANDIDATE] == 4 and roles[1][ItemRole.GOLD_POSITIVE] == 1
    assert sum(roles[1].values()) == 5  # the last chunk is short: 4 of its 5 candidate places taken


def test_promoted_gold_is_never_a_qualification_item():
    campaign, pairs = _campaign_answered_three_times()
    pool_before = set(QualificationItem.objects.filter(campaign=campaign).values_list("pk", flat=True))
    followups_plan(campaign=campaign)
    promoted = HitItem.objects.filter(
        hit__campaign=campaign, hit__followup_round=1, role__in=[ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE]
    ).select_related("pair")
    assert promoted.count() == 2
    assert set(QualificationItem.objects.filter(campaign=campaign).values_list("pk", flat=True)) == pool_before
    in_hits = {(item.pair.image_id, item.pair.caption_id) for item in HitItem.objects.filter(hit__campaign=campaign)}
    attempt = qualification_start(campaign=campaign, worker=WorkerFactory())
    shown = set(QualificationItem.objects.filter(pk__in=attempt.items).values_list("image_id", "caption_id"))
    assert shown and not shown & in_hits


def test_a_pair_at_the_answer_cap_is_not_asked_again():
    campaign, _ = _campaign_answered_three_times(max_answers_per_pair=3, settle_min_answers=2)
    report = followups_plan(campaign=campaign)
    assert (report["hits"], report["pairs"], report["unsettled"]) == (0, 0, 2)
    redundancy = campaign_redundancy(campaign=campaign)
    assert (redundancy["settled"], redundancy["capped"], redundancy["collecting"]) == (6, 2, 0)


def test_the_requester_sees_the_answers_saved_against_a_fixed_redundancy(client):
    """One answer per pair so far on a campaign asking one first: 8 answers where three each would be 24."""
    campaign = live_campaign_with_hits(hits=1, candidates=8, redundancy=1, adaptive_redundancy=True)
    hit = campaign.hits.get()
    assignment_score(assignment_id=submit(hit, candidate="yes").pk)
    rejected = submit(hit, candidate="no")  # rejected work is not counted
    rejected.status = AssignmentStatus.REJECTED
    rejected.save(update_fields=["status"])
    redundancy = campaign_redundancy(campaign=campaign)
    assert FIXED_REDUNDANCY == 3
    assert (redundancy["pairs"], redundancy["answers"], redundancy["answers_per_pair"]) == (8, 8, 1.0)
    assert (redundancy["fixed_answers"], redundancy["saved"]) == (24, 16)
    assert redundancy["saved_share"] == pytest.approx(2 / 3)
    assert (redundancy["settled"], redundancy["collecting"], redundancy["capped"]) == (0, 8, 0)  # one answer each
    client.force_login(campaign.owner)
    page = client.get(reverse("review-quality", args=[campaign.pk])).content.decode()
    assert 'id="r-per-pair">1.00<' in page and 'id="r-saved">16<' in page and "67% of the 24" in page
    assert 'id="r-settled">0<' in page and "8 still collecting answers" in page
