"""A requester in Debian's Chromium: create a campaign with the form, build it, read the numbers, launch it;
a queued build that the page follows until it is built or failed.

Screenshots go to test-artifacts/ (gitignored): campaign-01-form.png ... campaign-07-build-failed.png.
"""

import re

import pytest

from annotator.core import task_names
from annotator.models import Campaign, CampaignStatus, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.e2e.support import logged_in_context, screenshot
from tests.factories import user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def shot(page, name):
    screenshot(page, f"campaign-{name}", full_page=True)


def test_requester_creates_builds_and_launches_a_campaign(live_server, browser):
    requester = user_with_role(Role.REQUESTER, username="req-e2e")
    dataset = make_dataset(images=30, name="coco-mini")
    for i in range(2):
        add_run(dataset=dataset, name=f"e2e-model-{i}", seed=i, directions=("i2t",))
    other = make_dataset(images=3, name="other-set")
    add_run(dataset=other, name="other-model", seed=9, directions=("i2t",))

    page = logged_in_context(browser, live_server, requester, viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/campaigns/")
    page.get_by_role("link", name="New campaign").click()
    page.get_by_label("Name").fill("Verify coco-mini")
    page.get_by_label("Dataset").select_option(label="coco-mini")
    # Only the chosen dataset's runs are offered.
    assert not page.get_by_label("other-model on other-set", exact=False).is_visible()
    page.get_by_label("e2e-model-0 on coco-mini", exact=False).check()
    page.get_by_label("e2e-model-1 on coco-mini", exact=False).check()
    page.get_by_label("Sample count").fill("20")
    page.get_by_label("Redundancy").fill("2")
    page.get_by_label("Reward cents").fill("140")
    shot(page, "01-form")
    page.get_by_role("button", name="Save as draft").click()
    page.wait_for_url("**/campaigns/*/")
    assert "saved as a draft" in page.content()

    page.get_by_role("button", name="Build HITs").click()
    page.wait_for_load_state()
    page.locator("#stat-hits").wait_for(timeout=60_000)  # built in a thread of the server; the page follows it
    campaign = Campaign.objects.get(name="Verify coco-mini")
    hits = campaign.hits.count()
    assert campaign.status == CampaignStatus.BUILT and hits > 0
    assert page.locator("#stat-hits").inner_text() == str(hits)
    cost = f"${hits * 2 * 1.4 * 1.2:,.2f}"
    assert page.locator("#stat-cost").inner_text() == cost
    assert page.get_by_text("Overlap between annotators").is_visible()
    shot(page, "02-built")

    page.get_by_role("button", name="Launch").click()
    page.wait_for_url(re.compile(r"/confirm/launch/"))
    assert page.locator("#confirm-cost").inner_text() == cost  # the cost, before any money is spent
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.BUILT
    shot(page, "02b-confirm-launch")
    page.get_by_role("button", name="Launch the campaign").click()
    page.wait_for_load_state()
    assert "Launched" in page.content()
    assert page.get_by_text(f"0 submitted (awaiting review), 0 approved of {hits} HITs").is_visible()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.LIVE
    shot(page, "03-live")

    phone = logged_in_context(browser, live_server, requester, viewport={"width": 390, "height": 844}).new_page()
    phone.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert phone.get_by_role("button", name="Pause").is_visible()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 420  # no sideways scrolling of the page on a phone (the overlap table scrolls itself)
    shot(phone, "04-phone")


def test_a_queued_build_shows_building_and_the_page_refreshes_itself_until_built(live_server, browser, monkeypatch):
    """With a real broker the build runs on a worker: the page says so, then follows it without a click."""
    from annotator.campaigns.services import build as services
    from annotator.campaigns.services.lifecycle import campaign_create

    queued = []
    monkeypatch.setattr(services, "enqueue_long_on_commit", lambda name, *args: queued.append((name, *args)))
    requester = user_with_role(Role.REQUESTER, username="req-e2e-queued")
    dataset = make_dataset(images=30, name="coco-queued")
    runs = [add_run(dataset=dataset, name=f"queued-model-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    campaign = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Queued build", sample_count=20)
    doomed = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Doomed build", direction="t2i")

    page = logged_in_context(browser, live_server, requester, viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    page.get_by_role("button", name="Build HITs").click()
    page.wait_for_load_state()
    assert page.get_by_text("Building…").is_visible()
    assert not page.get_by_role("button", name="Build HITs").is_visible()
    assert queued == [(task_names.CAMPAIGN_BUILD, campaign.pk)]
    shot(page, "05-building")

    assert services.campaign_build_run(campaign_id=campaign.pk) == CampaignStatus.BUILT  # the worker
    page.locator("#stat-hits").wait_for(timeout=15000)  # the page's own refresh, no click
    assert page.locator("#stat-hits").inner_text() == str(Campaign.objects.get(pk=campaign.pk).hits.count())
    assert page.get_by_role("button", name="Launch").is_visible()
    shot(page, "06-built-after-refresh")

    page.goto(f"{live_server.url}/campaigns/{doomed.pk}/")
    page.get_by_role("button", name="Build HITs").click()
    page.wait_for_load_state()
    assert services.campaign_build_run(campaign_id=doomed.pk) == CampaignStatus.DRAFT
    page.get_by_text("The last build failed").wait_for(timeout=15000)
    assert page.get_by_text("The chosen runs have no t2i candidates for this campaign.").is_visible()
    assert page.get_by_role("button", name="Build HITs").is_visible()
    shot(page, "07-build-failed")
