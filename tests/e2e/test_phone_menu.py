"""Paper cuts on a 390 px phone (issue 35): the requester's top bar wrapped to 4 rows (161 px) and the
quality page scrolled sideways by 235 px. The top bar folds its links behind a Menu button; the quality
page fits the screen."""

import pytest

from annotator.models import CampaignStatus, Role
from tests.annotator.quality_support import hit_with_gold
from tests.e2e.support import logged_in_context, screenshot
from tests.factories import user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844, "is_mobile": True, "has_touch": True}


def test_the_top_bar_is_a_menu_on_a_phone_and_the_quality_page_fits(live_server, browser):
    requester = user_with_role(Role.REQUESTER, username="phone-requester")
    hit = hit_with_gold(owner=requester, redundancy=1, status=CampaignStatus.LIVE)
    page = logged_in_context(browser, live_server, requester, viewport=PHONE).new_page()
    page.goto(f"{live_server.url}/campaigns/")
    header = page.locator("header.top")
    assert header.bounding_box()["height"] < 70  # one row: the brand and the Menu button
    menu = page.get_by_role("button", name="Menu")
    assert menu.is_visible() and not page.get_by_role("link", name="Datasets").is_visible()
    menu.click()
    assert menu.get_attribute("aria-expanded") == "true"
    page.get_by_role("link", name="Datasets").click()
    page.wait_for_url("**/datasets/")
    screenshot(page, "phone-menu", full_page=False)

    page.goto(f"{live_server.url}/review/campaigns/{hit.campaign.pk}/quality/")
    width = page.evaluate("document.documentElement.scrollWidth")
    screenshot(page, "phone-quality", full_page=False)
    assert width <= PHONE["width"], f"the quality page scrolls sideways on a phone ({width}px)"

    desktop = logged_in_context(browser, live_server, requester, viewport={"width": 1280, "height": 900}).new_page()
    desktop.goto(f"{live_server.url}/campaigns/")
    assert desktop.get_by_role("link", name="Datasets").is_visible()
    assert not desktop.get_by_role("button", name="Menu").is_visible()
