"""A requester in Debian's Chromium: the top bar, a campaign shared with a researcher from its page, a HIT
previewed as a worker sees it, a copy, a list searched, and times shown in the browser's own time zone.

Screenshots go to test-artifacts/ (gitignored): comforts-01-campaign.png ... comforts-05-research.png.
"""

import pytest

from annotator.campaigns.services.build import campaign_build
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.models import Assignment, Campaign, CampaignStatus, Role
from tests.annotator.campaign_support import add_run, make_dataset
from tests.e2e.support import logged_in_context, screenshot
from tests.factories import user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def shot(page, name):
    screenshot(page, f"comforts-{name}", full_page=True)


def test_requester_shares_previews_copies_and_reads_local_times(live_server, browser):
    requester = user_with_role(Role.REQUESTER, username="req-comforts")
    researcher = user_with_role(Role.RESEARCHER, username="res-comforts")
    dataset = make_dataset(images=30, name="comforts-set")
    runs = [add_run(dataset=dataset, name=f"comforts-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    campaign = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Comforts", direction="i2t")
    campaign_build(campaign=campaign)

    context = logged_in_context(
        browser, live_server, requester, viewport={"width": 1280, "height": 900}, timezone_id="Asia/Tokyo"
    )
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Campaigns").click()
    page.wait_for_url("**/campaigns/")
    created = page.locator("time").first
    utc_text = created.get_attribute("title")
    assert utc_text.endswith("UTC") and "UTC" not in created.inner_text()  # rewritten in Tokyo time
    page.get_by_label("Search").fill("comf")
    page.get_by_role("button", name="Show").click()
    page.get_by_role("link", name="Comforts").click()

    page.get_by_label("Researcher's user name").fill("res-comforts")
    page.get_by_role("button", name="Share", exact=True).click()
    assert page.get_by_text("Shared with res-comforts").is_visible()
    shot(page, "01-campaign")

    page.get_by_role("link", name="Preview a HIT as a worker sees it").click()
    assert page.get_by_text("Preview: this is the HIT as a worker sees it").is_visible()
    assert "gold" not in page.content().lower()
    assert page.locator("section.item").count() == campaign.hits.order_by("pk").first().items.count()
    assert not Assignment.objects.exists()
    shot(page, "02-preview")

    page.go_back()
    page.get_by_role("button", name="Copy as a new draft").click()
    page.wait_for_load_state()
    copy = Campaign.objects.get(name="Comforts (copy)")
    assert copy.status == CampaignStatus.DRAFT
    shot(page, "03-copy")
    page.get_by_role("link", name="Delete this draft").click()
    shot(page, "04-confirm")
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url("**/campaigns/")
    assert not Campaign.objects.filter(pk=copy.pk).exists()

    research = logged_in_context(browser, live_server, researcher, viewport={"width": 1280, "height": 900}).new_page()
    research.goto(f"{live_server.url}/research/")
    assert research.get_by_role("link", name="Comforts").first.is_visible()
    assert research.get_by_role("navigation", name="Main").get_by_role("link", name="Campaigns").count() == 0
    shot(research, "05-research")
