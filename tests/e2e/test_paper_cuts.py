"""The paper cuts of issue 35 as a person meets them in a browser: where a researcher lands, the research
list's counts, a refused CxC export, rankings that match nothing, HIT numbers, units, the worker's earnings,
what "Aggregate labels now" says it did and the Rank with form of an importing dataset."""

import json
import re

import pytest

from annotator.models import CampaignStatus, DatasetStatus, ExportJob, HitItem, ItemRole, Role
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit
from tests.e2e.support import logged_in_context, screenshot
from tests.factories import HitItemFactory, LabelFactory, WorkerFactory, add_qualification_pool, user_with_role
from tests.ranking_support import ranking_dataset
from tests.research_helpers import LABELLED_PAIRS, research_campaign

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
DESKTOP = {"width": 1280, "height": 900}


def test_a_researchers_journey_without_the_paper_cuts(live_server, browser, tmp_path):
    researcher = user_with_role(Role.RESEARCHER, username="cuts-researcher")
    campaign = research_campaign(name="Cut campaign")
    campaign.shared_with.add(researcher)
    for label in list(campaign.pairs.all().values_list("labels__pk", "labels__pair_id", "labels__choice")):
        _, pair_id, choice = label
        for method in ("posterior", "dawid_skene"):
            LabelFactory(pair_id=pair_id, method=method, choice=choice)
    page = logged_in_context(browser, live_server, researcher, viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/")
    page.wait_for_url("**/research/")  # lands on Labels & evaluation, not a near-empty home page
    assert page.get_by_role("heading", name="Labels & evaluation").is_visible()
    row = page.get_by_role("row", name="Cut campaign")
    cells = row.locator("td").all_inner_texts()
    assert str(len(LABELLED_PAIRS)) in cells and str(4 * len(LABELLED_PAIRS)) not in cells
    screenshot(page, "cuts-research-list")

    page.get_by_role("link", name="Cut campaign").click()
    assert page.locator("#export-format option[value='cxc_csv']").count() == 0
    # The option is hidden on a four-choice campaign; a person can still send it (an old tab, edited markup).
    page.evaluate(
        """() => { const select = document.querySelector('#export-format');
        select.add(new Option('CxC CSV', 'cxc_csv')); select.value = 'cxc_csv'; }"""
    )
    with page.expect_response(lambda response: response.url.endswith("/export")) as refused:
        page.get_by_role("button", name="Start export").click()
    page.wait_for_load_state()
    assert refused.value.status == 400
    error = page.locator("#export-error")
    assert error.is_visible() and "for similarity (0-5) campaigns" in error.inner_text()
    # The research page around the error, not a bare 400 page: its menu, its heading, the form to try again.
    assert page.get_by_role("navigation", name="Main").is_visible()
    assert page.get_by_role("heading", name="Cut campaign").is_visible()
    assert page.get_by_role("button", name="Start export").is_visible()
    assert not ExportJob.objects.filter(campaign=campaign).exists()
    screenshot(page, "cuts-cxc-export-refused")
    rankings = tmp_path / "wrong-ids.json"
    rankings.write_text(json.dumps({"i2t": {"img-1": ["cap-1"]}, "t2i": {"cap-2": ["img-2"]}}))
    page.locator("input[name='rankings']").set_input_files(str(rankings))
    page.locator("input[name='name']").last.fill("wrong ids")
    page.locator("form[action$='/evaluate'] button[type='submit']").click()
    page.wait_for_load_state()
    assert page.get_by_text("none of the rankings' query ids is one of the").first.is_visible()
    screenshot(page, "cuts-wrong-ids")


def test_a_requester_and_a_worker_without_the_paper_cuts(live_server, browser):
    requester = user_with_role(Role.REQUESTER, username="cuts-requester")
    hit = hit_with_gold(owner=requester, redundancy=1, status=CampaignStatus.LIVE)
    assignment = submit(hit, gold_positive="no", candidate="mostly_no")
    from annotator.quality.services.scoring import assignment_score

    assignment_score(assignment_id=assignment.pk)
    page = logged_in_context(browser, live_server, requester, viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/review/campaigns/{hit.campaign.pk}/")
    html = page.content()
    assert f">HIT {hit.index + 1}<" in html and f">HIT {hit.index}<" not in html
    screenshot(page, "cuts-review-hit-number")

    dataset, _images, _captions = ranking_dataset()
    dataset.owner = requester
    dataset.status = DatasetStatus.IMPORTING
    dataset.save(update_fields=["owner", "status"])
    page.goto(f"{live_server.url}/datasets/{dataset.pk}/ranking/")
    assert page.get_by_label("Rank with").count() == 0
    assert page.get_by_text("Ranking opens once the dataset is ready").is_visible()

    assignment.status = "approved"
    assignment.save(update_fields=["status"])
    worker_page = logged_in_context(browser, live_server, assignment.worker.user, viewport=DESKTOP).new_page()
    worker_page.goto(f"{live_server.url}/work/")
    nav = worker_page.get_by_role("navigation", name="Main")
    assert nav.get_by_text(f"Earned ${hit.campaign.reward_cents / 100:.2f}").is_visible()
    assert worker_page.get_by_role("link", name=f"#{hit.index + 1}", exact=True).first.is_visible()
    screenshot(worker_page, "cuts-worker-earnings")

    # With no task queue (make test, make demo) the aggregation runs in the request: it must not say "queued".
    from django.conf import settings

    assert settings.CELERY_TASK_ALWAYS_EAGER, "run under make test-postgres or the embedded default (eager Celery)"
    page.goto(f"{live_server.url}/research/campaigns/{hit.campaign.pk}/")
    assert page.get_by_text("No labels yet").is_visible()
    page.goto(f"{live_server.url}/review/campaigns/{hit.campaign.pk}/quality/")
    page.get_by_role("button", name="Aggregate labels now").click()
    page.wait_for_load_state()
    said = page.locator("ul.messages").inner_text()
    assert "done in place" in said and "queued" not in said.lower()
    screenshot(page, "cuts-aggregate-done-in-place")
    page.goto(f"{live_server.url}/research/campaigns/{hit.campaign.pk}/")
    assert page.get_by_text("No labels yet").count() == 0
    labelled = [int(n) for n in page.locator("h2:has-text('Labels') + table tbody td:nth-child(2)").all_inner_texts()]
    assert labelled and all(n > 0 for n in labelled)


def _row(page, heading: str) -> str:
    return page.locator("tr", has=page.locator("th", has_text=heading)).inner_text()


RECORD = "Worker's record on this requester's campaigns"
WRONG_NUMBER = re.compile(r"\b1 (HIT|time|worker|assignment)s\b")


def test_every_count_says_its_unit_in_the_right_number(live_server, browser):
    """The campaign and review pages say "1 HIT", "1 time", "1 worker", the plural from 2 on; never "1 HITs"."""
    requester = user_with_role(Role.REQUESTER, username="units-requester")
    hit = hit_with_gold(owner=requester, redundancy=1, status=CampaignStatus.LIVE)
    campaign = hit.campaign
    first = assignment_score(assignment_id=submit(hit, gold_positive="no", candidate="mostly_no").pk)
    pool = add_qualification_pool(campaign=campaign)
    pool[0].times_shown = 1
    pool[0].save(update_fields=["times_shown"])
    page = logged_in_context(browser, live_server, requester, viewport=DESKTOP).new_page()

    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert "approved of 1 HIT (" in page.locator("#campaign-progress").inner_text()
    assert "shown 1 time in tests; at most 1 time one item" in _row(page, "Pool exposure")
    assert "each in at most 1 HIT" in _row(page, "HIT gold pairs")
    assert "at most 1 worker saw one gold pair" in _row(page, "Gold exposure")
    assert "1 worker each" in page.locator(".card", has=page.locator("#stat-hits")).inner_text()
    assert "1 assignment to review" in page.locator(".quality-panel").inner_text()
    assert not WRONG_NUMBER.search(page.locator("main").inner_text())
    screenshot(page, "cuts-units-one")
    page.goto(f"{live_server.url}/review/assignments/{first.pk}/")
    assert re.search(r"rejected, 1 HIT\s*$", page.get_by_text(RECORD).inner_text())
    assert not WRONG_NUMBER.search(page.locator("main").inner_text())

    # Two of each: a second HIT sharing the first one's gold positive, answered by another worker; a third
    # HIT for the first worker; a second qualification item shown once; two workers per HIT.
    second = hit_with_gold(campaign=campaign)
    gold = HitItem.objects.get(hit=hit, role=ItemRole.GOLD_POSITIVE).pair
    HitItemFactory(hit=second, role=ItemRole.GOLD_POSITIVE, pair=gold)
    assignment_score(assignment_id=submit(second, worker=WorkerFactory(), gold_positive="no").pk)
    assignment_score(assignment_id=submit(hit_with_gold(campaign=campaign), worker=first.worker).pk)
    pool[1].times_shown = 1
    pool[1].save(update_fields=["times_shown"])
    campaign.redundancy = 2
    campaign.save(update_fields=["redundancy"])

    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert "approved of 3 HITs (" in page.locator("#campaign-progress").inner_text()
    assert "shown 2 times in tests; at most 1 time one item" in _row(page, "Pool exposure")
    assert "each in at most 2 HITs" in _row(page, "HIT gold pairs")
    assert "at most 2 workers saw one gold pair" in _row(page, "Gold exposure")
    assert "2 workers each" in page.locator(".card", has=page.locator("#stat-hits")).inner_text()
    assert "2 assignments to review" in page.locator(".quality-panel").inner_text()
    screenshot(page, "cuts-units-two")
    page.goto(f"{live_server.url}/review/assignments/{first.pk}/")
    assert re.search(r"rejected, 2 HITs\s*$", page.get_by_text(RECORD).inner_text())
