"""A requester in Debian's Chromium works through the review queue: one by one, then in bulk.

Screenshots go to test-artifacts/ (gitignored): review-01-queue.png ... review-04-phone.png.
"""

import pytest

from annotator.models import AssignmentStatus, CampaignStatus, Role
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit
from tests.e2e.support import logged_in_context, screenshot
from tests.factories import CampaignFactory, user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def shot(page, name):
    screenshot(page, f"review-{name}", full_page=True)


def test_requester_rejects_one_then_approves_the_rest_in_bulk(live_server, browser):
    owner = user_with_role(Role.REQUESTER, username="review-e2e")
    campaign = CampaignFactory(owner=owner, name="Review me", status=CampaignStatus.LIVE, redundancy=3)
    hit = hit_with_gold(campaign=campaign, candidates=3)
    spam = assignment_score(assignment_id=submit(hit, candidate="yes", gold_negative="yes").pk)
    slips = [
        assignment_score(assignment_id=submit(hit, candidate="no", gold_positive="mostly_no").pk) for _ in range(2)
    ]

    page = logged_in_context(browser, live_server, owner, viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/review/campaigns/{campaign.pk}/")
    assert page.get_by_role("heading", name="Review queue").is_visible()
    assert page.locator("table.review-queue tbody tr").count() == 3
    shot(page, "01-queue")

    page.get_by_role("link", name=f"#{spam.pk}").click()
    assert page.locator("tr.gold.wrong").count() == 1  # the gold negative answered "100% YES"
    assert page.get_by_text("100% NO or Mostly NO").is_visible()
    shot(page, "02-assignment")
    page.get_by_label("Then open the next flagged assignment").uncheck()
    page.get_by_label("Reason (the worker sees it; required to reject)").fill("Answered 100% YES to everything")
    page.get_by_role("button", name="Reject").click()
    page.wait_for_url(f"**/review/campaigns/{campaign.pk}/")
    assert "rejected; its HIT is offered to another worker" in page.locator(".messages").inner_text()
    assert page.locator("table.review-queue tbody tr").count() == 2

    page.get_by_label("Select all").check()
    page.get_by_role("button", name="Approve selected").click()
    page.wait_for_url(f"**/review/campaigns/{campaign.pk}/")
    assert "2 assignments approved." in page.locator(".messages").inner_text()
    assert page.get_by_text("Nothing to review right now.").is_visible()
    shot(page, "03-done")

    spam.refresh_from_db()
    assert spam.status == AssignmentStatus.REJECTED
    assert spam.events.get(to_status="rejected").actor == owner
    for slip in slips:
        slip.refresh_from_db()
        assert slip.status == AssignmentStatus.APPROVED

    phone = logged_in_context(browser, live_server, owner, viewport={"width": 390, "height": 844}).new_page()
    phone.goto(f"{live_server.url}/review/campaigns/{campaign.pk}/quality/")
    assert phone.get_by_role("heading", name="Workers by HITs done (ECCV Table B.1)").is_visible()
    shot(phone, "04-phone")
