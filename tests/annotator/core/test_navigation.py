"""The top bar per role, the Review index it links to, and times written for the viewer's own time zone."""

import datetime
import re

import pytest
from django.conf import settings
from django.template import Context, Template
from django.urls import reverse
from django.utils import timezone

from annotator.models import Role
from tests.factories import DatasetFactory, user_with_role

pytestmark = pytest.mark.django_db


def _nav(client, user) -> str:
    client.force_login(user)
    page = client.get(reverse("home"), follow=True).content.decode()
    return page.split('<nav aria-label="Main">')[1].split("</nav>")[0]


def test_a_requester_gets_their_areas_in_the_top_bar(client):
    nav = _nav(client, user_with_role(Role.REQUESTER))
    for label, name in [
        ("Datasets", "dataset-list"),
        ("Campaigns", "campaign-list"),
        ("Review", "review-index"),
        ("Labels &amp; evaluation", "research-home"),
        ("Operations", "operations"),
    ]:
        assert f'<a href="{reverse(name)}">{label}</a>' in nav
    assert "Accounts" not in nav  # operators only


def test_a_researcher_and_a_worker_see_only_their_own_areas(client):
    researcher = _nav(client, user_with_role(Role.RESEARCHER))
    assert reverse("research-home") in researcher and reverse("labelset-list") in researcher
    assert reverse("campaign-list") not in researcher and reverse("operations") not in researcher
    worker = _nav(client, user_with_role(Role.WORKER))
    assert reverse("work_home") in worker
    for name in ("campaign-list", "dataset-list", "research-home", "review-index"):
        assert reverse(name) not in worker


def test_every_link_in_the_requesters_bar_opens(client):
    nav = _nav(client, user_with_role(Role.REQUESTER))
    for href in re.findall(r'<a href="([^"]+)"', nav):
        assert client.get(href).status_code == 200, href


def test_the_review_index_is_for_requesters_only(client):
    client.force_login(user_with_role(Role.WORKER))
    assert client.get(reverse("review-index")).status_code == 403
    client.force_login(user_with_role(Role.REQUESTER))
    assert "Nothing to review yet" in client.get(reverse("review-index")).content.decode()


def test_times_are_written_as_utc_time_elements_for_the_browser_to_localise(client):
    when = datetime.datetime(2026, 3, 4, 5, 6, tzinfo=datetime.UTC)
    html = Template('{% load local_times %}{{ when|local_time }} {{ when|local_time:"time" }}').render(
        Context({"when": when})
    )
    assert '<time datetime="2026-03-04T05:06:00+00:00" data-style="datetime">2026-03-04 05:06 UTC</time>' in html
    assert 'data-style="time">05:06 UTC</time>' in html

    user = user_with_role(Role.REQUESTER)
    DatasetFactory(owner=user, name="timed")
    client.force_login(user)
    page = client.get(reverse("dataset-list")).content.decode()
    assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT[^"]+\+00:00" data-style="datetime">', page)
    assert "<script>" not in page  # the conversion is in the static script every page loads
    script = (settings.BASE_DIR / "static" / "js" / "vericap.js").read_text()
    assert 'querySelectorAll("time[datetime]")' in script and "toLocaleString" in script


def test_the_review_index_counts_submissions_awaiting_a_decision(client):
    from annotator.models import AssignmentStatus, Campaign, CampaignStatus
    from tests.factories import AssignmentFactory, HitFactory

    requester = user_with_role(Role.REQUESTER)
    hit = HitFactory()
    Campaign.objects.filter(pk=hit.campaign_id).update(owner=requester, status=CampaignStatus.LIVE, name="Waiting")
    for status in (AssignmentStatus.SUBMITTED, AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED):
        AssignmentFactory(hit=hit, status=status, submitted_at=timezone.now())
    client.force_login(requester)
    page = client.get(reverse("review-index")).content.decode()
    assert f'href="{reverse("review-queue", args=[hit.campaign_id])}">Waiting</a>' in page
    assert '<td class="num">2</td>' in page
