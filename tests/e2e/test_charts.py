"""The charts in Debian's Chromium: the campaign page and the quality page draw every chart from its
json_script payload under the strict Content-Security-Policy (no violation, no script error), and the
canvases hold pixels.

Screenshots go to test-artifacts/ (gitignored): charts-01-campaign.png, charts-02-quality.png.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.models import Answer, AssignmentStatus, CampaignStatus, ItemRole, PairSource, Role, WorkerStanding
from tests.annotator.quality_support import hit_with_gold, submit
from tests.e2e.support import logged_in_context, screenshot, wait_until
from tests.factories import MachineAnnotatorFactory, RankingRunFactory, WorkerFactory, user_with_role

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DRAWN = """[...document.querySelectorAll('[data-chart]')].every(f => f.getAttribute('data-chart-drawn') === 'true')"""
# A canvas holds pixels when some pixel is not transparent.
PAINTED = """[...document.querySelectorAll('[data-chart] canvas')].every(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  for (let i = 3; i < d.length; i += 4) { if (d[i] !== 0) return true; }
  return false; })"""


def _campaign_with_a_days_work(owner):
    """Six workers on a live campaign over six hours, two annotators' proposals, some follow-ups."""
    hit = hit_with_gold(owner=owner, redundancy=6, status=CampaignStatus.LIVE, candidates=4, name="Charts demo")
    dataset = hit.campaign.dataset
    runs = [
        RankingRunFactory(annotator=MachineAnnotatorFactory(name=name), dataset=dataset) for name in ("PCME", "CLIP")
    ]
    candidates = list(hit.items.filter(role=ItemRole.CANDIDATE).order_by("position"))
    for rank, item in enumerate(candidates, start=1):
        PairSource.objects.create(pair=item.pair, run=runs[0], direction="i2t", rank=rank, score=1.0 / rank)
        PairSource.objects.create(pair=item.pair, run=runs[1], direction="i2t", rank=5 - rank, score=1.0 / rank)
    start = timezone.now() - timedelta(hours=6)
    answers = ["yes", "partially_yes", "mostly_no", "no"]
    for n in range(6):
        assignment = submit(hit, worker=WorkerFactory(), candidate=answers[n % 4], seconds=[3, 6, 9, 14, 25, 70][n])
        assignment.submitted_at = start + timedelta(minutes=55 * n)
        assignment.scored_at = assignment.submitted_at
        if n != 4:
            assignment.status, assignment.decided_at = AssignmentStatus.APPROVED, start + timedelta(minutes=60 * n + 30)
        else:
            assignment.status, assignment.decided_at = AssignmentStatus.REJECTED, start + timedelta(minutes=60 * n + 30)
        assignment.save()
        if answers[n % 4] in ("partially_yes", "mostly_no"):
            reasons, aspects = ["wrong_way", "extra_concepts"][: 1 + n % 2], ["color", "quantity"][: 1 + n % 2]
            Answer.objects.filter(assignment=assignment, item__role=ItemRole.CANDIDATE).update(
                shortcomings=reasons, wrong_aspects=aspects
            )
        WorkerStanding.objects.create(requester=owner, worker=assignment.worker, gold_correct=n + 1, gold_total=8)
    return hit.campaign


def test_campaign_and_quality_pages_draw_their_charts(live_server, browser):
    owner = user_with_role(Role.REQUESTER, username="charts-e2e")
    campaign = _campaign_with_a_days_work(owner)
    page = logged_in_context(browser, live_server, owner, viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15000)
    problems = []
    # A refused inline script or a script error would show here. Missing files are judged by their address
    # below: only the product's own static files count, the factory pairs' images have no files behind them.
    page.on("console", lambda msg: msg.type == "error" and "404" not in msg.text and problems.append(msg.text))
    page.on("response", lambda resp: "/static/" in resp.url and resp.status >= 400 and problems.append(resp.url))
    page.on("pageerror", lambda error: problems.append(str(error)))

    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert page.locator("[data-chart]").count() == 3  # spend over time, throughput, time per item
    wait_until(page, DRAWN)
    wait_until(page, PAINTED)
    page.locator("#throughput-heading").scroll_into_view_if_needed()
    screenshot(page, "charts-01-campaign")

    page.goto(f"{live_server.url}/review/campaigns/{campaign.pk}/quality/")
    # Workers, Table B.2 for each of the two annotators, Table B.3 twice (shortcomings, wrong aspects).
    assert page.locator("[data-chart]").count() == 5
    wait_until(page, DRAWN)
    wait_until(page, PAINTED)
    screenshot(page, "charts-02-quality")
    assert problems == []
