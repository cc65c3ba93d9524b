"""A researcher in Debian's Chromium imports ECCV-style split files, combines them with the original pairs,
compares the sets and uploads a model's rankings.

Screenshots go to test-artifacts/ (gitignored): labelsets-01-list.png ... labelsets-05-phone.png.
"""

import json

import pytest

from annotator.labels.services.labelsets.builds import labelset_from_original
from annotator.models import LabelSet, Role
from tests.e2e.support import logged_in_context, screenshot
from tests.factories import user_with_role
from tests.research_helpers import research_campaign

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def shot(page, name):
    screenshot(page, f"labelsets-{name}", full_page=True)


def test_researcher_imports_combines_compares_and_evaluates(live_server, browser, tmp_path):
    researcher = user_with_role(Role.RESEARCHER, username="labelsets-e2e")
    campaign = research_campaign(name="Shared for label sets")
    campaign.shared_with.add(researcher)
    coco = labelset_from_original(dataset=campaign.dataset, name="coco", user=researcher)
    i2t, t2i = tmp_path / "eccv_image_to_caption.json", tmp_path / "eccv_caption_to_image.json"
    i2t.write_text(json.dumps({"1": [11, 21, 22], "2": [12, 21]}))
    t2i.write_text(json.dumps({"22": [1, 3]}))
    rankings = tmp_path / "rankings.json"
    rankings.write_text(json.dumps({"i2t": {"1": ["21", "12", "11"], "2": ["12", "22"]}, "t2i": {"22": ["3", "1"]}}))

    page = logged_in_context(browser, live_server, researcher, viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/research/")
    page.get_by_role("main").get_by_role("link", name="Label sets", exact=True).click()
    assert page.get_by_role("heading", name="Label sets").is_visible()
    shot(page, "01-list")

    page.get_by_label("Name", exact=True).first.fill("eccv")
    page.get_by_label("File(s)").set_input_files([str(i2t), str(t2i)])
    page.get_by_label("Models that proposed the file's candidates (comma-separated)").fill("tfidf")
    page.get_by_role("button", name="Import").click()
    page.wait_for_url("**/research/labelsets/*/")
    assert "Imported eccv@1." in page.locator(".messages").inner_text()
    row = page.locator("table tbody tr").filter(has_text="i2t").first
    assert row.locator("td").nth(1).inner_text() == "2" and row.locator("td").nth(3).inner_text() == "5"
    assert page.locator("ul.bars li").count() >= 2
    shot(page, "02-detail")

    eccv = LabelSet.objects.get(name="eccv")
    page.get_by_label("Compare with").select_option(str(coco.pk))
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url("**/research/labelsets/compare/**")
    table3 = page.locator("table").first
    assert "eccv@1" in table3.inner_text() and "coco@1" in table3.inner_text()
    assert page.get_by_role(
        "heading", name="Precision and recall against each other (ECCV Caption Table 2)"
    ).is_visible()
    shot(page, "03-compare")

    page.goto(f"{live_server.url}/research/labelsets/{eccv.pk}/")
    page.get_by_label("Model name").fill("tfidf")
    page.get_by_label("Rankings file (JSON)").set_input_files(str(rankings))
    page.get_by_role("button", name="Upload and evaluate").click()
    page.wait_for_url("**/runs/*/")
    assert page.get_by_role("heading", name="tfidf on eccv@1").is_visible()
    assert "tfidf proposed the candidates the judges of eccv@1 saw" in page.locator(".warnings").inner_text()
    assert page.get_by_role("heading", name="judged@10").is_visible()
    shot(page, "04-run")

    phone = logged_in_context(browser, live_server, researcher, viewport={"width": 390, "height": 844}).new_page()
    phone.goto(f"{live_server.url}/research/labelsets/{eccv.pk}/")
    assert phone.get_by_role("heading", name="eccv@1").is_visible()
    shot(phone, "05-phone")
