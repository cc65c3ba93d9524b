"""Paper cuts of counts (issue 35): every count says its unit in the right number ("1 HIT", not "1 HITs"),
and HITs are numbered from 1 where a person reads them (review pages, the worker's lists), not from 0."""

import re

import pytest
from django.template import Context, Template
from django.urls import reverse

from annotator.models import CampaignStatus, Role
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


def _render(text: str, **context) -> str:
    return Template("{% load counting %}" + text).render(Context(context))


def test_units_follow_the_count():
    assert _render('{{ n|units:"HIT" }}', n=1) == "1 HIT"
    assert _render('{{ n|units:"HIT" }}', n=3) == "3 HITs"
    assert _render('{{ n|units:"worker" }}', n=0) == "0 workers"
    assert _render('{{ n|units:"time" }}', n=1) == "1 time"
    assert _render('{{ n|units:"query,queries" }}', n=2) == "2 queries"
    assert _render("{{ i|hit_number }}", i=0) == "1"


def test_review_pages_number_hits_from_one_and_say_one_hit(client):
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, redundancy=1, status=CampaignStatus.LIVE)
    assignment = assignment_score(assignment_id=submit(hit, gold_positive="no", candidate="mostly_no").pk)
    client.force_login(owner)
    queue = client.get(reverse("review-queue", args=[hit.campaign.pk])).content.decode()
    page = client.get(reverse("review-assignment", args=[assignment.pk])).content.decode()
    for html in (queue, page):  # HIT index n is shown as HIT n + 1
        assert re.search(rf"HIT {hit.index + 1}\b", html) and not re.search(rf"HIT {hit.index}\b", html)
    done = re.search(r"rejected, (\d+) (HITs?)</li>", page)
    assert done and done.group(2) == ("HIT" if done.group(1) == "1" else "HITs")


def test_the_workers_top_bar_shows_what_they_earned(client):
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, redundancy=1, status=CampaignStatus.LIVE)
    assignment = submit(hit, gold_positive="yes", candidate="yes")
    assignment.status = "approved"
    assignment.save(update_fields=["status"])
    client.force_login(assignment.worker.user)
    nav = client.get(reverse("work_home")).content.decode().split('<nav aria-label="Main">')[1].split("</nav>")[0]
    reward = hit.campaign.reward_cents
    assert f"Earned ${reward / 100:.2f}" in nav
