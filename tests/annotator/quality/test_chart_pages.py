"""The campaign and quality pages carry their chart series as json_script payloads, load the vendored
Chart.js and static/js/charts.js, keep a table beside every chart and put no inline script on the page."""

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from annotator.models import Answer, AssignmentStatus, CampaignStatus, ItemRole, PairSource, Role
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import MachineAnnotatorFactory, RankingRunFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def live(client):
    """A live campaign with one approved assignment (proposed by one annotator) and one submitted one."""
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, redundancy=2, status=CampaignStatus.LIVE, candidates=2)
    run = RankingRunFactory(annotator=MachineAnnotatorFactory(name="gamma"), dataset=hit.campaign.dataset)
    first, second = hit.items.filter(role=ItemRole.CANDIDATE).order_by("position")
    PairSource.objects.create(pair=first.pair, run=run, direction="i2t", rank=1, score=1.0)
    PairSource.objects.create(pair=second.pair, run=run, direction="i2t", rank=2, score=0.5)
    approved = submit(hit, seconds=3.0)
    Answer.objects.filter(assignment=approved, item=second).update(choice="mostly_no", shortcomings=["grammar"])
    approved.status, approved.decided_at = AssignmentStatus.APPROVED, timezone.now() + timedelta(minutes=1)
    approved.save()
    submit(hit, seconds=45.0)
    client.force_login(owner)
    return hit.campaign


def _payload(html: str, element_id: str):
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    assert match, f"no json_script {element_id}"
    return json.loads(match.group(1))


def _scripts(html: str) -> list[str]:
    return re.findall(r'<script src="([^"]+)"', html)


def _no_inline_script(html: str) -> None:
    for tag in re.findall(r"<script[^>]*>", html):
        assert 'src="' in tag or 'type="application/json"' in tag, tag
    assert "<style" not in html and ' style="' not in html


def test_campaign_page_carries_throughput_and_time_per_item(client, live):
    html = client.get(reverse("campaign-detail", args=[live.pk])).content.decode()
    throughput = _payload(html, "chart-throughput")
    assert sum(throughput["submitted"]) == 2 and throughput["total_approved"][-1] == 1
    seconds = _payload(html, "chart-seconds")
    assert seconds["answers"] == 8 and seconds["counts"][1] == 4 and seconds["counts"][5] == 4  # 2-5 s, 30-60 s
    assert 'data-chart="throughput"' in html and 'data-chart="histogram"' in html
    assert 'id="throughput-table"' in html and 'id="seconds-table"' in html
    scripts = _scripts(html)
    assert any(s.endswith("vendor/chartjs/chart.umd.min.js") for s in scripts)
    assert any(s.endswith("js/charts.js") for s in scripts)
    _no_inline_script(html)


def test_a_built_campaign_shows_no_charts(client):
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, status=CampaignStatus.BUILT)
    client.force_login(owner)
    html = client.get(reverse("campaign-detail", args=[hit.campaign.pk])).content.decode()
    assert "chart-throughput" not in html


def test_quality_page_carries_worker_intervals_and_tables_b2_b3(client, live):
    response = client.get(reverse("review-quality", args=[live.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    workers = _payload(html, "chart-workers")
    assert len(workers["labels"]) == 2
    assert sorted(workers["approval"], key=lambda v: v is None) == [1.0, None]
    b2 = _payload(html, "chart-b2-1")
    assert b2["annotator"] == "gamma (i2t)" and b2["labels"] == ["Rank 1", "Rank 2", "All"]
    assert b2["series"][0]["data"] == [1.0, 0.0, 0.5] and b2["series"][2]["data"] == [0.0, 1.0, 0.5]
    shortcomings = _payload(html, "chart-b3-shortcomings")
    assert shortcomings["rows"] == [{"annotator": "gamma", "n": 1, "shares": [0.0, 0.0, 0.0, 1.0]}]
    assert 'id="chart-b3-shortcomings-table"' in html and 'id="per-worker"' in html
    assert html.count('data-chart="stacked"') == 1 and html.count('data-chart="grouped"') == 2
    assert any(s.endswith("js/charts.js") for s in _scripts(html))
    _no_inline_script(html)


def test_the_chart_scripts_are_served_from_the_static_tree():
    root = Path(settings.BASE_DIR) / "static"
    vendored = (root / "vendor/chartjs/chart.umd.min.js").read_text()
    assert vendored.startswith("/*!\n * Chart.js v4.")
    assert "MIT License" in (root / "vendor/chartjs/LICENSE.md").read_text()
    script = (root / "js/charts.js").read_text()
    assert "eval(" not in script and "new Function" not in script
