"""The operations page: health and queues for requesters, their own late work with the reason, staff see all."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotator.models import Assignment, Dataset, DatasetStatus, Role, SweepRun
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import CampaignFactory, DatasetFactory, UserFactory, user_with_role

pytestmark = pytest.mark.django_db


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def late_submission(campaign, seconds=600):
    hit = hit_with_gold(campaign=campaign)
    assignment = submit(hit)
    Assignment.objects.filter(pk=assignment.pk).update(submitted_at=timezone.now() - timedelta(seconds=seconds))
    return assignment


def test_a_requester_sees_their_late_scores_and_why_but_not_other_requesters_work(settings):
    settings.SWEEP_SCORE_AFTER_SECONDS = 60
    mine = CampaignFactory(name="Mine <b>bold</b>", redundancy=3)
    theirs = CampaignFactory(name="Someone else's", redundancy=3)
    late_submission(mine)
    late_submission(theirs)
    SweepRun.objects.create(started_at=timezone.now(), finished_at=timezone.now(), scored=4, problems=["x < y"])
    response = logged_in(mine.owner).get("/operations/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Mine &lt;b&gt;bold&lt;/b&gt;" in page and "Someone else" not in page
    assert "1 submission without a score" in page
    assert "the next sweep pass scores it" in page  # eager here: no broker, the sweep ran a moment ago
    assert "x &lt; y" in page and "4 submissions scored" in page
    assert response.context["health"].status == "ok"


def test_staff_see_everyones_late_work():
    late_submission(CampaignFactory(name="First", redundancy=3))
    late_submission(CampaignFactory(name="Second", redundancy=3))
    page = logged_in(UserFactory(is_staff=True)).get("/operations/").content.decode()
    assert "First" in page and "Second" in page


def test_a_stalled_import_is_listed_with_its_reason():
    requester = user_with_role(Role.REQUESTER)
    dataset = DatasetFactory(owner=requester, name="slow", status=DatasetStatus.IMPORTING)
    Dataset.objects.filter(pk=dataset.pk).update(updated_at=timezone.now() - timedelta(minutes=30))
    page = logged_in(requester).get("/operations/").content.decode()
    assert "Import of dataset slow" in page
    assert "No progress reported for a while" in page


def test_nothing_late_says_so_and_workers_and_anonymous_visitors_are_kept_out():
    requester = user_with_role(Role.REQUESTER)
    assert "Nothing is late." in logged_in(requester).get("/operations/").content.decode()
    assert logged_in(user_with_role(Role.WORKER)).get("/operations/").status_code == 403
    assert Client().get("/operations/").status_code == 302


def test_the_campaign_page_says_when_scores_are_late(settings):
    settings.SWEEP_SCORE_AFTER_SECONDS = 60
    campaign = CampaignFactory(redundancy=3)
    client = logged_in(campaign.owner)
    assert "waited" not in client.get(f"/campaigns/{campaign.pk}/").content.decode()
    late_submission(campaign)
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "1 submission has waited" in page and 'href="/operations/"' in page
