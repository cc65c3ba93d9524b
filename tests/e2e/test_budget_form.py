"""A requester whose campaign paused at its budget, in Debian's Chromium: the spend over time is drawn
against the budget, a bad amount in the budget form comes back in the form with the reason, a good one
lets the campaign resume. Screenshots: test-artifacts/budget-*.png."""

import pytest

from annotator.models import CampaignStatus
from tests.annotator.crowd.test_money import claim_and_submit
from tests.e2e.support import logged_in_context, screenshot, wait_until
from tests.factories import live_campaign_with_hits

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_paused_campaign_gets_a_higher_budget_from_its_page(browser, live_server):
    campaign = live_campaign_with_hits(
        hits=4, reward_cents=100, platform_fee_percent=20.0, budget_cents=240, rationale_followups=False
    )
    claim_and_submit(campaign)
    claim_and_submit(campaign)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.PAUSED

    page = logged_in_context(browser, live_server, campaign.owner, viewport={"width": 1100, "height": 900}).new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert "Raise the budget below, then resume." in page.locator("#budget-reached").inner_text()
    wait_until(page, "document.querySelector('[data-chart=\"spend\"]').getAttribute('data-chart-drawn') === 'true'")
    chart = page.evaluate("document.querySelector('[data-chart=\"spend\"]').chart.data.datasets.map(d => d.label)")
    assert chart == ["Spent in all", "Budget"]
    page.locator("#spend-chart-heading").scroll_into_view_if_needed()
    screenshot(page, "budget-1-spend-chart", full_page=False)

    page.get_by_label("Budget cap in US dollars", exact=False).fill("plenty")
    page.get_by_role("button", name="Set the budget").click()
    page.wait_for_load_state()
    form = page.locator("#budget-form")
    assert "Give the budget in dollars and cents" in form.locator("#budget-error").inner_text()
    assert page.get_by_label("Budget cap in US dollars", exact=False).input_value() == "plenty"
    form.scroll_into_view_if_needed()
    screenshot(page, "budget-2-error-in-the-form", full_page=False)

    page.get_by_label("Budget cap in US dollars", exact=False).fill("25.00")
    page.get_by_role("button", name="Set the budget").click()
    page.wait_for_load_state()
    assert "The budget is now $25.00." in page.content()
    page.get_by_role("button", name="Resume").click()
    page.wait_for_load_state()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.LIVE and campaign.budget_cents == 2500
    screenshot(page, "budget-3-resumed", full_page=False)
    assert not errors
