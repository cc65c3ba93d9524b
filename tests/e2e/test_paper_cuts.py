"""The paper cuts of issue 35 as a person meets them in a browser: where a researcher lands, the research
list's counts, a refused CxC export, rankings that match nothing, HIT numbers, units, the worker's earnings
and the Rank with form of an importing dataset."""

import json

import pytest

from annotator.models import CampaignStatus, DatasetStatus, Role
from tests.annotator.quality_support import hit_with_gold, submit
from tests.e2e.support import logged_in_context, screenshot
from tests.factories import LabelFactory, user_with_role
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
