"""Adaptive gold (docs/quality.md): gold-light HITs (one gold item, one more candidate, the same size) go first
to workers with a clean gold record, full-gold HITs to new workers and after a miss; either falls back to the
other kind; a gold-light HIT still scores; the worker cannot tell the two apart."""

import re
from collections import Counter

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.campaigns.services.policy import campaign_policy_update
from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.hits import hit_worker_items
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.crowd.services.answers import assignment_submit
from annotator.crowd.services.assignments import assignment_claim
from annotator.crowd.services.workers import worker_for_user
from annotator.models import (
    FLAG_GOLD_FAILED,
    Assignment,
    AssignmentStatus,
    ItemRole,
    QualificationAttempt,
    Role,
    WorkerStanding,
)
from annotator.quality.services.scoring import assignment_score
from tests.factories import WorkerFactory, live_campaign_with_hits, user_with_role

pytestmark = pytest.mark.django_db

GOLD = (ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE)


@pytest.fixture(autouse=True)
def _gold_light_after_four(settings):
    settings.QUALITY_GOLD_LIGHT_AFTER = 4


def qualified(campaign, worker=None):
    worker = worker or WorkerFactory()
    QualificationAttempt.objects.create(
        worker=worker, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
    )
    return worker


def with_streak(campaign, streak: int):
    worker = qualified(campaign)
    WorkerStanding.objects.create(requester=campaign.owner, worker=worker, gold_clean_streak=streak)
    return worker


def gold_items(hit) -> int:
    return hit.items.filter(role__in=GOLD).count()


def do_hit(campaign, worker, *, gold_right: bool = True) -> Assignment:
    """Claim, answer (candidates "yes" and "no" in turn; gold right or wrong), submit and score one HIT."""
    assignment = assignment_claim(campaign=campaign, worker=worker)
    roles = dict(assignment.hit.items.values_list("pk", "role"))
    gold = {ItemRole.GOLD_POSITIVE: "yes", ItemRole.GOLD_NEGATIVE: "no"}
    if not gold_right:
        gold = {ItemRole.GOLD_POSITIVE: "no", ItemRole.GOLD_NEGATIVE: "yes"}
    answers = [
        {"item_token": token, "choice": gold.get(roles[item_id], ("yes", "no")[n % 2]), "seconds_spent": 3}
        for n, (token, item_id) in enumerate(hit_item_tokens(hit=assignment.hit).items())
    ]
    assignment_submit(assignment=assignment, worker=worker, answers=answers)
    return assignment_score(assignment_id=assignment.pk)


def test_a_workers_gold_share_falls_as_their_clean_record_grows_and_rises_after_a_miss():
    # 8 HITs of 4 items: the odd ones gold-light (3 candidates + 1 gold), the even ones 2 + 2.
    campaign = live_campaign_with_hits(hits=8, candidates=2, gold_light_hits=(1, 3, 5, 7), gold_light_share=0.5)
    worker = qualified(campaign)
    done = [do_hit(campaign, worker) for _ in range(4)]  # streak 2, 4, 5, 6
    done.append(do_hit(campaign, worker, gold_right=False))  # the light HIT's one gold item missed: streak 0
    done.append(do_hit(campaign, worker))
    per_hit = [gold_items(a.hit) for a in done]
    assert per_hit == [2, 2, 1, 1, 1, 2]
    assert all(len(hit_item_tokens(hit=a.hit)) == 4 for a in done)  # every HIT the same size
    shares = [sum(per_hit[: n + 1]) / (4 * (n + 1)) for n in range(4)]
    assert shares == sorted(shares, reverse=True) and shares[-1] < shares[0]  # 0.5 -> 0.375
    standing = WorkerStanding.objects.get(requester=campaign.owner, worker=worker)
    assert (standing.gold_correct, standing.gold_total, standing.gold_clean_streak) == (8, 9, 2)


def test_new_workers_get_full_gold_first_and_a_clean_record_gold_light_first():
    campaign = live_campaign_with_hits(hits=4, candidates=2, gold_light_hits=(1, 3), gold_light_share=0.5)
    clean = assignment_claim(campaign=campaign, worker=with_streak(campaign, 4))
    new = assignment_claim(campaign=campaign, worker=qualified(campaign))
    almost = assignment_claim(campaign=campaign, worker=with_streak(campaign, 3))
    assert (clean.hit.index, new.hit.index, almost.hit.index) == (1, 0, 2)
    assert clean.hit.gold_light and not new.hit.gold_light and not almost.hit.gold_light


def test_the_preference_falls_back_to_any_hit_with_room_and_never_exceeds_redundancy():
    """Nobody is refused work for their record: 3 HITs x redundancy 2 = 6 slots, one gold-light, taken by
    three clean and three new workers; the seventh is told there is none left."""
    campaign = live_campaign_with_hits(
        hits=3, candidates=2, redundancy=2, gold_light_hits=(1,), gold_light_share=0.34, shared_gold=True
    )
    clean = [with_streak(campaign, 10) for _ in range(3)]
    new = [qualified(campaign) for _ in range(3)]
    taken = {worker.pk: assignment_claim(campaign=campaign, worker=worker).hit for worker in clean + new}
    per_hit = Counter(hit.index for hit in taken.values())
    assert per_hit == {0: 2, 1: 2, 2: 2}
    assert [taken[w.pk].gold_light for w in clean] == [True, True, False]  # the light HIT filled, then full
    assert not any(taken[w.pk].gold_light for w in new)
    with pytest.raises(ApplicationError) as error:
        assignment_claim(campaign=campaign, worker=with_streak(campaign, 10))
    assert error.value.status == 404


def test_a_new_worker_takes_a_gold_light_hit_when_nothing_else_has_room():
    campaign = live_campaign_with_hits(hits=2, candidates=2, gold_light_hits=(1,), gold_light_share=0.5)
    assignment_claim(campaign=campaign, worker=qualified(campaign))
    assert assignment_claim(campaign=campaign, worker=qualified(campaign)).hit.gold_light


def test_a_campaign_without_gold_light_share_ignores_the_record():
    campaign = live_campaign_with_hits(hits=2, candidates=2, gold_light_hits=(1,), gold_light_share=0.0)
    assert not assignment_claim(campaign=campaign, worker=with_streak(campaign, 50)).hit.gold_light


@pytest.mark.parametrize("gold_right", [True, False])
def test_a_gold_light_hit_scores_its_one_gold_item(gold_right):
    campaign = live_campaign_with_hits(
        hits=1, candidates=2, gold_light_hits=(0,), gold_light_share=1.0, tolerated_gold_misses=0
    )
    scored = do_hit(campaign, qualified(campaign), gold_right=gold_right)
    assert (scored.gold_correct, scored.gold_total) == (int(gold_right), 1)
    assert scored.flags == ([] if gold_right else [FLAG_GOLD_FAILED])
    assert (scored.auto_approve_at is not None) is gold_right


def test_a_worker_cannot_tell_a_gold_light_hit_from_a_full_one():
    """Same number of items, the same keys per item, and no mark of gold or of the HIT's gold count on the page
    or in an automatic rejection reason the worker reads."""
    campaign = live_campaign_with_hits(
        hits=2, candidates=2, gold_light_hits=(1,), gold_light_share=0.5, gold_fail_action="reject"
    )
    full, light = campaign.hits.order_by("index")
    full_items, light_items = hit_worker_items(hit=full), hit_worker_items(hit=light)
    assert len(full_items) == len(light_items) == 4
    assert [set(e) for e in full_items] == [set(e) for e in light_items]
    user = user_with_role(Role.WORKER)
    worker = qualified(campaign, worker_for_user(user=user))
    WorkerStanding.objects.create(requester=campaign.owner, worker=worker, gold_clean_streak=4)
    client = Client()
    client.force_login(user)
    response = client.post(reverse("work_claim", args=[campaign.pk]))
    assignment = Assignment.objects.get(
        pk=int(re.search(r"/assignments/(\d+)/", response["Content-Location"]).group(1))
    )
    assert assignment.hit_id == light.pk
    html = client.get(reverse("work_hit", args=[assignment.pk])).content.decode().lower()
    assert html.count('class="item"') + html.count('class="item ') == 4
    for word in ("gold", "light", "check question", "candidate"):
        assert word not in html, word
    scored = do_hit(campaign, qualified(campaign), gold_right=False)  # the full HIT, both gold items missed
    assert scored.status == AssignmentStatus.REJECTED
    reason = scored.events.get(to_status=AssignmentStatus.REJECTED).reason
    assert not re.search(r"\d", reason), reason


def test_the_gold_light_share_is_a_policy_setting_checked_like_the_others():
    campaign = live_campaign_with_hits(hits=1)
    assert campaign_policy_update(campaign=campaign, gold_light_share=0.3).gold_light_share == 0.3
    with pytest.raises(ApplicationError, match="gold_light_share"):
        campaign_policy_update(campaign=campaign, gold_light_share=1.5)
