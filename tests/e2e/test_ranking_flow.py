"""A requester, in Debian's Chromium: on the dataset page, rank with tfidf_pivot, watch the run finish,
read the candidates of a query, and see the run on the dataset page. Screenshots go to test-artifacts/."""

import pytest

from annotator import models
from tests import factories
from tests.e2e.support import screenshot
from tests.ranking_support import ranking_dataset

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def shot(page, name):
    screenshot(page, f"ranking-{name}", full_page=True)


def test_requester_ranks_a_dataset_and_reads_candidates(browser, live_server):
    requester = factories.user_with_role(models.Role.REQUESTER, username="req-rank")
    dataset, images, captions = ranking_dataset(name="beach-and-buses")
    dataset.owner = requester
    dataset.save(update_fields=["owner"])

    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/?next=/datasets/{dataset.pk}/")
    page.get_by_label("User name").fill("req-rank")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/datasets/{dataset.pk}/")
    page.get_by_label("Rank with").select_option(label="tfidf_pivot (built in)")
    page.get_by_label("Candidates per query (top K)").fill("5")
    shot(page, "1-dataset-page")
    page.get_by_role("button", name="Rank").click()
    page.wait_for_url("**/ranking/runs/*/")
    # The run goes on in a thread of the server; the job widget follows it and reloads the page when done.
    page.wait_for_selector('.job-progress[data-job-state="done"]', timeout=60_000)
    run = models.RankingRun.objects.get(dataset=dataset)
    assert run.status == models.RunStatus.SUCCEEDED
    assert "Done (Succeeded)" in page.locator(".job-progress").inner_text()  # the job widget
    # The first caption's candidates are listed; the dog caption's best image is the dog picture.
    first = page.locator("table").last.locator("tbody tr").first
    assert "image img0" in first.inner_text()
    shot(page, "2-run-page")

    page.get_by_label("Direction").select_option("i2t")
    page.get_by_label("Query id (caption or image)").fill(str(images[1].pk))
    page.get_by_role("button", name="Show").click()
    assert "bus" in page.locator("table").last.locator("tbody tr").first.inner_text().lower()
    shot(page, "3-image-query")

    page.goto(f"{live_server.url}/datasets/{dataset.pk}/")
    row = page.locator(".ranking-runs tbody tr").first
    assert "tfidf_pivot" in row.inner_text() and "100" in row.inner_text()
