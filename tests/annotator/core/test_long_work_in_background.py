"""Long work started from a page (a ranking, a build, an export) never runs inside the request on the
embedded default (eager Celery): the request answers while the task is held at its start, a thread of the
server does it afterwards, and the job ends done. Nothing is faked: the tasks are the real ones."""

import threading
import time

import pytest
from django.urls import reverse

from annotator import models
from annotator.campaigns.services.lifecycle import campaign_create
from config.celery import app as celery_app
from tests import factories
from tests.annotator.campaign_support import add_run, make_dataset
from tests.background_support import background_join
from tests.ranking_support import ranking_dataset
from tests.research_helpers import research_campaign

pytestmark = pytest.mark.django_db(transaction=True)  # the work is handed over when the request commits


def _post_answers_before_the_task(client, held, url, data=None):
    assert celery_app.conf.task_always_eager  # the embedded default, where the work used to block
    began = time.monotonic()
    response = client.post(url, data or {})
    answered_in = time.monotonic() - began
    assert response.status_code == 302, response.content
    assert answered_in < 10  # a request that ran the held task would wait 30 s
    assert held.started.wait(timeout=10), "the task was never handed to a background thread"
    assert held.thread is not threading.current_thread()
    return response


def test_rank_with_from_the_dataset_page(client, held_task):
    held = held_task("workers.tasks.ranking.ranking_run_task")
    requester = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(requester)
    dataset, _images, _captions = ranking_dataset()
    dataset.owner = requester
    dataset.save(update_fields=["owner"])

    response = _post_answers_before_the_task(
        client, held, reverse("ranking-start", args=[dataset.pk]), {"annotator": "kind:tfidf_pivot", "top_k": "3"}
    )
    run = models.RankingRun.objects.get(dataset=dataset)
    assert run.status == models.RunStatus.QUEUED
    page = client.get(response.url).content.decode()
    assert 'data-job-state="queued"' in page  # the progress widget follows it from there
    held.release.set()
    background_join()
    status = client.get(reverse("job-status", args=["ranking", run.pk])).json()
    assert status["state"] == "done" and status["percent"] == 100.0


def test_build_from_the_campaign_page(client, held_task):
    held = held_task("workers.tasks.campaigns.campaign_build_task")
    requester = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(requester)
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name=f"bg-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    campaign = campaign_create(owner=requester, dataset=dataset, runs=runs, name="Background build")

    _post_answers_before_the_task(client, held, reverse("campaign-action", args=[campaign.pk, "build"]))
    campaign.refresh_from_db()
    assert campaign.status == models.CampaignStatus.BUILDING
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "Building: this page follows the build" in page
    held.release.set()
    background_join()
    campaign.refresh_from_db()
    assert campaign.status == models.CampaignStatus.BUILT and campaign.hits.exists()


def test_export_from_the_research_page(client, held_task):
    held = held_task("workers.tasks.exports.export_run")
    researcher = factories.user_with_role(models.Role.RESEARCHER)
    client.force_login(researcher)
    campaign = research_campaign()
    campaign.shared_with.add(researcher)

    _post_answers_before_the_task(
        client, held, f"/research/campaigns/{campaign.pk}/export", {"format": "eccv_json", "variant": "strict"}
    )
    job = models.ExportJob.objects.get(campaign=campaign)
    assert job.status == models.ExportStatus.QUEUED
    held.release.set()
    background_join()
    job.refresh_from_db()
    assert job.status == models.ExportStatus.SUCCEEDED and job.file
