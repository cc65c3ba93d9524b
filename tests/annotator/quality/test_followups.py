"""Adaptive redundancy (annotator/quality/services/followups.py, annotator/quality/selectors/redundancy.py): a settled
pair stops collecting answers, an unsettled one is asked again up to the cap, pairs the crowd settled
unanimously become gold of the follow-up HITs (never qualification items), and the requester sees the
answers saved."""

from collections import Counter

import pytest
from django.urls import reverse

from annotator.crowd.services.qualification import qualification_start
from annotator.models import (
    Answer,
    AssignmentStatus,
    Hit,
    HitItem,
    ItemRole,
    QualificationItem,
)
from annotator.quality.selectors.redundancy import FIXED_REDUNDANCY, campaign_redundancy
from annotator.quality.services.followups import followups_plan
from annotator.quality.services.scoring import assignment_score
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


def test_follow_ups_stay_claimable_by_the_crowd_that_worked_the_campaign():
    """Four HITs of four candidates, each worked by one worker, the pairs dealt to the HITs in turn (as a build
    shuffles them). With one answer each and three asked for, every pair needs more. A claim never gives a worker a
    pair they were shown, so a follow-up that mixed pairs of every HIT would be shut to the whole crowd (claims
    refused "no HIT left" while HITs stay open): each follow-up holds the pairs of one earlier HIT, with gold only
    that HIT's worker has seen, and each of the four workers can claim one."""
    from annotator.crowd.services.assignments import assignment_claim

    campaign = live_campaign_with_hits(
        hits=4, candidates=4, redundancy=1, adaptive_redundancy=True, settle_min_answers=3, qualification_items=0
    )
    items = list(
        HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).order_by("hit__index", "position")
    )
    pairs = sorted(item.pair_id for item in items)
    hits = sorted({item.hit_id for item in items})
    for number, item in enumerate(sorted(items, key=lambda item: (item.position, item.hit_id))):
        item.hit_id = hits[number % 4]  # pair ids dealt in turn: consecutive ids sit in different HITs
        item.pair_id = pairs[number]
    for hit_id in hits:
        for position, item in enumerate((i for i in items if i.hit_id == hit_id), start=100):
            item.position = position
    HitItem.objects.bulk_update(items, ["hit_id", "pair_id", "position"])
    workers = [WorkerFactory() for _ in hits]
    held_by = {}
    for worker, hit in zip(workers, Hit.objects.filter(pk__in=hits).order_by("pk"), strict=True):
        assignment_score(assignment_id=submit(hit, worker=worker, candidate="yes").pk)
        held_by.update(
            dict.fromkeys(hit.items.filter(role=ItemRole.CANDIDATE).values_list("pair_id", flat=True), worker)
        )
    assert followups_plan(campaign=campaign)["hits"] == 4
    for followup in Hit.objects.filter(campaign=campaign, followup_round=1):
        owners = {held_by[p] for p in followup.items.filter(role=ItemRole.CANDIDATE).values_list("pair_id", flat=True)}
        assert len(owners) == 1
    claimed = {assignment_claim(campaign=campaign, worker=worker).hit_id for worker in workers}
    assert len(claimed) == 4


def test_the_machine_prior_is_no_second_answer_on_a_pair_an_annotator_ranked_first():
    """settle_min_answers 2 with the machine prior counting as one: a pair ranked third settles on one "yes"; a pair
    an annotator ranked first does not (the machine and careful workers both take a first-ranked negative for a
    match), so it is asked again."""
    from annotator.models import PairSource
    from annotator.quality.selectors.redundancy import machine_answers, pair_states
    from tests.factories import RankingRunFactory

    campaign = live_campaign_with_hits(
        hits=1,
        candidates=4,
        redundancy=1,
        adaptive_redundancy=True,
        machine_prior=True,
        settle_probability=0.5,
        settle_min_answers=2,
    )
    run = RankingRunFactory(dataset=campaign.dataset)
    campaign.runs.add(run)
    hit = campaign.hits.get()
    pairs = list(hit.items.filter(role=ItemRole.CANDIDATE).order_by("position").values_list("pair_id", flat=True))
    for pair_id, rank in zip(pairs, (1, 1, 3, 3), strict=True):
        PairSource.objects.create(pair_id=pair_id, run=run, direction="i2t", rank=rank, score=1.0 / rank)
    assignment_score(assignment_id=submit(hit, candidate="yes").pk)
    assert machine_answers(campaign=campaign) == (1, set(pairs[:2]))
    states = pair_states(campaign=campaign)
    assert [states[p]["answers"] for p in pairs] == [1, 1, 1, 1]
    assert [states[p]["settled"] for p in pairs] == [False, False, True, True]
    report = followups_plan(campaign=campaign)
    assert report["pairs"] == 2
