"""Money: spend so far (approved, pending, fees), the budget cap that pauses a campaign, money as money."""

import pytest
from django.utils import timezone

from annotator.campaigns.selectors.crowd_work import campaign_spend
from annotator.campaigns.services.lifecycle import campaign_resume
from annotator.campaigns.services.policy import campaign_policy_update
from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.crowd.services.answers import assignment_submit
from annotator.crowd.services.assignments import assignment_claim
from annotator.models import Assignment, CampaignStatus, QualificationAttempt
from annotator.quality.services.decisions import assignment_approve, assignment_reject
from annotator.templatetags.money import money, number
from tests.factories import WorkerFactory, live_campaign_with_hits

pytestmark = pytest.mark.django_db


def qualified(campaign):
    worker = WorkerFactory()
    QualificationAttempt.objects.create(
        worker=worker, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
    )
    return worker


def claim_and_submit(campaign):
    worker = qualified(campaign)
    assignment = assignment_claim(campaign=campaign, worker=worker)
    answers = [{"item_token": t, "choice": "yes", "seconds_spent": 3} for t in hit_item_tokens(hit=assignment.hit)]
    return assignment_submit(assignment=assignment, worker=worker, answers=answers)


def test_money_and_numbers_read_as_people_write_them():
    assert money(145740) == "$1,457.40"
    assert money(140) == "$1.40"
    assert money(-250) == "-$2.50"
    assert money(12.5) == "$0.12" or money(12.5) == "$0.13"
    assert money(None) == "" and number(None) == ""
    assert number(1234567) == "1,234,567"
    assert number(1234.5) == "1,234.5"


def test_spend_counts_approved_pending_and_fees_and_not_rejected():
    campaign = live_campaign_with_hits(hits=4, reward_cents=140, platform_fee_percent=20.0, rationale_followups=False)
    first, second, third = (claim_and_submit(campaign) for _ in range(3))
    assignment_approve(assignment=first)
    assignment_reject(assignment=third, reason="wrong on the gold")
    spend = campaign_spend(campaign=campaign)
    assert (spend["approved_assignments"], spend["pending_assignments"]) == (1, 1)
    assert (spend["approved_cents"], spend["pending_cents"], spend["fees_cents"]) == (140, 140, 56)
    assert spend["total_cents"] == 336
    assert spend["budget_cents"] is None and spend["budget_left_cents"] is None and not spend["budget_reached"]
    assert second.status == "submitted"


def test_a_small_budget_pauses_the_campaign_when_the_approvals_reach_it_and_no_more_hits_are_claimed():
    # Each assignment costs 100 + 20% = 120 cents; 360 pays for three, not four.
    campaign = live_campaign_with_hits(
        hits=6, reward_cents=100, platform_fee_percent=20.0, budget_cents=360, rationale_followups=False
    )
    for _ in range(2):
        assignment_approve(assignment=claim_and_submit(campaign))
        campaign.refresh_from_db()
        assert campaign.status == CampaignStatus.LIVE
    third = claim_and_submit(campaign)
    assignment_approve(assignment=third)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.PAUSED
    spend = campaign_spend(campaign=campaign)
    assert spend["total_cents"] == 360 and spend["budget_left_cents"] == 0 and spend["budget_reached"]

    claims_before = Assignment.objects.filter(hit__campaign=campaign).count()
    with pytest.raises(ApplicationError) as refused:
        assignment_claim(campaign=campaign, worker=qualified(campaign))
    assert refused.value.status == 409
    assert Assignment.objects.filter(hit__campaign=campaign).count() == claims_before

    with pytest.raises(ApplicationError, match="reached its budget") as refused:
        campaign_resume(campaign=campaign)
    assert refused.value.status == 409
    campaign_policy_update(campaign=campaign, budget_cents=600)
    assert campaign_resume(campaign=campaign).status == CampaignStatus.LIVE
    assert claim_and_submit(campaign).status == "submitted"


def test_pending_work_counts_against_the_budget_before_it_is_decided():
    campaign = live_campaign_with_hits(
        hits=4, reward_cents=100, platform_fee_percent=0.0, budget_cents=200, rationale_followups=False
    )
    claim_and_submit(campaign)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.LIVE
    claim_and_submit(campaign)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.PAUSED


def test_a_budget_must_be_positive():
    campaign = live_campaign_with_hits(hits=1)
    with pytest.raises(ApplicationError, match="budget_cents"):
        campaign_policy_update(campaign=campaign, budget_cents=0)
