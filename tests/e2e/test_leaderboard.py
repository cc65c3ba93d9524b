"""A researcher in Debian's Chromium compares five models on one campaign's labels: the leaderboard with
intervals, the bias flag, sorting by another metric, the chart, Kendall's tau, the other direction, the CSV.

Screenshots go to test-artifacts/ (gitignored): leaderboard-01-index.png ... leaderboard-05-phone.png.
"""

import csv
import io
import re

import pytest

from annotator.models import Role
from tests.e2e.support import logged_in_context, screenshot
from tests.factories import user_with_role
from tests.leaderboard_support import leaderboard_world

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def shot(page, name):
    screenshot(page, f"leaderboard-{name}", full_page=True)


def test_researcher_compares_five_models_on_the_leaderboard(
    live_server, browser, tmp_path, django_capture_on_commit_callbacks
):
    owner = user_with_role(Role.REQUESTER, username="req-board-e2e")
    researcher = user_with_role(Role.RESEARCHER, username="res-board-e2e")
    campaign, evaluations = leaderboard_world(
        tmp_path=tmp_path, capture=django_capture_on_commit_callbacks, owner=owner, researcher=researcher
    )
    assert len(evaluations) == 5

    page = logged_in_context(browser, live_server, researcher, viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/research/")
    page.get_by_role("main").get_by_role("link", name="leaderboards").click()
    shot(page, "01-index")
    page.get_by_role("link", name=campaign.name).click()
    page.wait_for_url(re.compile(r"/research/leaderboard/\d+/\?"))

    table = page.locator("table.board")
    names = table.locator("tbody th[scope=row]").all_inner_texts()
    assert len(names) == 5 and names[0].startswith("oracle-ish")  # best mAP@R first
    assert table.locator("tbody tr.biased").count() == 1
    assert "helped build these labels" in table.locator("tbody tr.biased").inner_text()
    assert "tfidf-builder" in table.locator("tbody tr.biased").inner_text()
    first_map = table.locator("tbody tr").first.locator("td").nth(8).inner_text()  # 1 place + 7 metrics before it
    assert "[" in first_map and "]" in first_map  # value with its interval
    assert page.locator("svg[role=img] rect.chart-bar").count() == 5
    assert page.get_by_role("heading", name="Do the metrics agree? Kendall's τ between the model orders").is_visible()
    shot(page, "02-board")

    page.get_by_role("link", name="NCS@5").click()
    page.wait_for_url(re.compile(r"sort=ncs5"))
    header = page.locator("th[aria-sort]")
    assert header.inner_text().startswith("NCS@5") and header.get_attribute("aria-sort") == "descending"
    values = [
        float(text.split()[0])
        for text in page.locator("table.board tbody tr").evaluate_all(
            "rows => rows.map(r => r.querySelectorAll('td')[r.querySelectorAll('td').length - 2].innerText)"
        )
    ]
    assert values == sorted(values, reverse=True)
    assert page.locator("figure.chart figcaption").inner_text().startswith("Bars: NCS@5")
    shot(page, "03-sorted-by-ncs5")

    page.get_by_label("Direction", exact=True).select_option("t2i")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"direction=t2i"))
    assert page.locator("table.board tbody tr").count() == 5
    shot(page, "04-t2i")

    with page.expect_download() as download:
        page.get_by_role("link", name="CSV (every direction and metric)").click()
    rows = list(csv.DictReader(io.StringIO(open(download.value.path()).read())))
    assert len(rows) == 10 and {row["model"] for row in rows} == set(evaluations)

    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.context.add_cookies(page.context.cookies())
    phone.goto(page.url)
    assert phone.evaluate(
        "document.documentElement.scrollWidth <= window.innerWidth + 1"
    )  # the table scrolls, not the page
    shot(phone, "05-phone")
