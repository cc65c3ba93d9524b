"""`make demo`'s promise, in Debian's Chromium: ranking the demo set from the dataset page answers at once
(eager Celery, as the embedded default runs it) and the job widget's bar moves while a thread of the server
ranks. Small chunks (settings) make the run many units long, each committing its progress, so the bar has
somewhere to go between 0 and 100. Screenshots go to test-artifacts/background-ranking-*.png."""

import io
import time

import pytest
from django.core.management.base import OutputWrapper

from annotator import models
from annotator.scenarios.demo import demo_dataset
from config.celery import app as celery_app
from tests import factories
from tests.e2e.support import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_rank_with_answers_at_once_and_the_bar_moves(browser, live_server, settings):
    assert celery_app.conf.task_always_eager  # the embedded default's mode, where "Rank with" used to freeze
    settings.RANKING_CHUNK_ROWS = 1  # one query per chunk: 95 + 19 top-K units
    settings.RANKING_SHARD_SIZE = 5  # 19 caption shards to encode
    requester = factories.user_with_role(models.Role.REQUESTER, username="requester", password="correct-horse-battery")
    demo_dataset(out=OutputWrapper(io.StringIO()))
    dataset = models.Dataset.objects.get(name="demo")
    assert dataset.owner == requester and dataset.status == models.DatasetStatus.READY

    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/?next=/datasets/{dataset.pk}/")
    page.get_by_label("User name").fill("requester")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/datasets/{dataset.pk}/")
    page.get_by_label("Rank with").select_option(label="tfidf_pivot (built in)")
    page.get_by_label("Candidates per query (top K)").fill("5")

    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/rank/")) as posted:
        page.get_by_role("button", name="Rank").click()
    assert posted.value.status == 302
    timing = posted.value.request.timing  # milliseconds from the request's start, as the browser saw them
    answered_in = (timing["responseStart"] - timing["requestStart"]) / 1000.0
    assert 0 < answered_in < 1.0, f"the POST took {answered_in:.2f} s"
    page.wait_for_url("**/ranking/runs/*/")
    run = models.RankingRun.objects.get(dataset=dataset)
    status_url = page.locator(".job-progress").get_attribute("data-job-url")
    assert status_url and page.locator(".job-progress").get_attribute("data-job-state") in ("queued", "running")
    screenshot(page, "background-ranking-1-queued", full_page=False)

    # What the widget polls, read as often as the page could: the percent only grows, with stops between.
    seen, shot_taken, deadline = [], False, time.monotonic() + 120
    while time.monotonic() < deadline:
        job = page.evaluate(
            "url => fetch(url, {headers: {Accept: 'application/json'}}).then(r => r.json())", status_url
        )
        seen.append(job["percent"])
        bar = page.locator(".job-progress .progress")
        if not shot_taken and bar.count() and 0 < float(bar.get_attribute("aria-valuenow") or 0) < 100:
            screenshot(page, "background-ranking-2-moving", full_page=False)  # the widget's bar mid-way
            shot_taken = True
        if job["state"] not in ("queued", "running"):
            break
        page.wait_for_timeout(50)
    assert seen[-1] == 100.0 and seen == sorted(seen), seen
    assert len({p for p in seen if 0 < p < 100}) >= 2, seen  # it moved in steps, not from 0 to done

    page.wait_for_selector('.job-progress[data-job-state="done"]', timeout=30_000)  # jobs.js reloads at the end
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED and run.chunks_done == run.chunks_total > 100
    screenshot(page, "background-ranking-3-done", full_page=False)
