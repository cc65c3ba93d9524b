"""The one background-job lifecycle (annotator/core/jobs.py): each kind is queued, runs, ends done or failed, is
retried, and shows as stalled when its heartbeat is old; the progress widget renders for each kind."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.campaigns.services.build import campaign_build_request
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.core.jobs import (
    BUILD_STALE_AFTER,
    EXPORT_STALE_AFTER,
    IMPORT_STALE_AFTER,
    RUN_STALE_AFTER,
    JobState,
    job_move,
    job_retry,
    job_stalled,
    job_state,
    job_view,
)
from annotator.datasets.services.uploads import dataset_upload
from annotator.labels.services.exports.jobs import export_create
from annotator.models import (
    CampaignStatus,
    Dataset,
    DatasetStatus,
    ExportStatus,
    RankingRun,
    Role,
    RunStatus,
)
from tests.annotator.campaign_support import add_run, make_dataset
from tests.annotator.datasets.test_datasets import _upload_files
from tests.factories import MachineAnnotatorFactory, RankingRunFactory, user_with_role
from tests.research_helpers import research_campaign

pytestmark = pytest.mark.django_db


def _widget(page: str, kind: str, pk: int, state: str) -> bool:
    url = reverse("job-status", args=[kind, pk])
    return f'data-job-url="{url}" data-job-state="{state}" data-job-kind="{kind}"' in page


# ---- dataset imports -------------------------------------------------------------------------------------


def test_an_import_is_queued_runs_and_is_done(tmp_path, django_capture_on_commit_callbacks):
    owner = user_with_role(Role.REQUESTER)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        dataset = dataset_upload(name="jobs-import", owner=owner, **_upload_files(tmp_path))
    assert job_state(dataset) == JobState.QUEUED and len(queued) == 1
    claimed = Dataset.objects.get(pk=dataset.pk)
    claimed.report = {"phase": "checking"}  # what the worker's claim writes (not saved: the task claims it)
    assert job_state(claimed) == JobState.RUNNING
    queued[0]()  # the worker imports it
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY and job_state(dataset) == JobState.DONE
    assert job_view(dataset)["percent"] == 100.0


def test_a_failed_import_is_retried_and_a_stalled_one_too(tmp_path, django_capture_on_commit_callbacks):
    owner = user_with_role(Role.REQUESTER)
    with django_capture_on_commit_callbacks(execute=False):
        dataset = dataset_upload(name="jobs-import-failed", owner=owner, **_upload_files(tmp_path))
    Dataset.objects.filter(pk=dataset.pk).update(
        status=DatasetStatus.FAILED, report={"phase": "failed", "errors": ["the worker ran out of disk"]}
    )
    dataset.refresh_from_db()
    view = job_view(dataset)
    assert view["state"] == "failed" and view["retryable"] and view["error"] == "the worker ran out of disk"
    with django_capture_on_commit_callbacks(execute=False) as again:
        dataset = job_retry(dataset)
    assert job_state(dataset) == JobState.QUEUED and len(again) == 1 and not job_stalled(dataset)
    # Its worker dies: no heartbeat for the import's stale time.
    Dataset.objects.filter(pk=dataset.pk).update(
        report={"phase": "checking"}, updated_at=timezone.now() - IMPORT_STALE_AFTER - timedelta(seconds=1)
    )
    dataset.refresh_from_db()
    assert job_state(dataset) == JobState.STALLED and job_view(dataset)["retryable"]
    with django_capture_on_commit_callbacks(execute=True) as resumed:
        dataset = job_retry(dataset)
    assert len(resumed) == 1
    dataset.refresh_from_db()
    assert job_state(dataset) == JobState.DONE and dataset.images.count() == 2


# ---- ranking runs ----------------------------------------------------------------------------------------


def _queued_run() -> RankingRun:
    return RankingRunFactory(status=RunStatus.QUEUED, annotator=MachineAnnotatorFactory(name="jobs-model"))


def test_a_ranking_run_is_queued_runs_and_is_done():
    run = _queued_run()
    assert job_state(run) == JobState.QUEUED
    job_move(run, RunStatus.RUNNING, started_at=timezone.now())
    run.chunks_total, run.chunks_done = 4, 1
    assert job_state(run) == JobState.RUNNING and job_view(run)["percent"] == 25.0
    job_move(run, RunStatus.SUCCEEDED, finished_at=timezone.now())
    assert job_state(run) == JobState.DONE and job_view(run)["percent"] == 100.0


def test_a_failed_ranking_run_is_retried_and_a_silent_one_is_stalled(django_capture_on_commit_callbacks):
    run = _queued_run()
    job_move(run, RunStatus.RUNNING, started_at=timezone.now())
    job_move(run, RunStatus.FAILED, error="CUDA out of memory")
    assert job_state(run) == JobState.FAILED and job_view(run)["error"] == "CUDA out of memory"
    with django_capture_on_commit_callbacks(execute=False) as queued:
        run = job_retry(run)
    assert job_state(run) == JobState.QUEUED and run.error == "" and len(queued) == 1
    # It runs, then its worker goes silent longer than a run's stale time.
    silent = timezone.now() - RUN_STALE_AFTER - timedelta(seconds=1)
    RankingRun.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, started_at=silent, progress={"beat_at": silent.timestamp()}
    )
    run.refresh_from_db()
    assert job_state(run) == JobState.STALLED and job_view(run)["retryable"]
    with django_capture_on_commit_callbacks(execute=False) as requeued:
        job_retry(run)  # the status stays running; the new task's claim takes the silent run over
    assert len(requeued) == 1
    # A run that beats again is no longer stalled, and a retry of it is refused.
    RankingRun.objects.filter(pk=run.pk).update(progress={"beat_at": timezone.now().timestamp()})
    run.refresh_from_db()
    assert job_state(run) == JobState.RUNNING and not job_view(run)["retryable"]


# ---- campaign builds -------------------------------------------------------------------------------------


@pytest.fixture
def world():
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name=f"jobs-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    return dataset, runs, user_with_role(Role.REQUESTER)


def test_a_build_is_queued_and_done(world, django_capture_on_commit_callbacks):
    """A build runs in one transaction under its row lock: nothing shows it running until it is done."""
    dataset, runs, owner = world
    campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, name="jobs-build", sample_count=10)
    assert job_state(campaign) is None  # a draft never built is no job yet
    with django_capture_on_commit_callbacks(execute=False) as queued:
        campaign = campaign_build_request(campaign=campaign)
    assert job_state(campaign) == JobState.QUEUED
    queued[0]()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.BUILT and job_state(campaign) == JobState.DONE


def test_a_failed_build_is_retried_and_a_lost_one_is_stalled(world, django_capture_on_commit_callbacks):
    dataset, runs, owner = world
    campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, name="jobs-doomed", direction="t2i")
    with django_capture_on_commit_callbacks(execute=True):
        campaign_build_request(campaign=campaign)
    campaign.refresh_from_db()
    view = job_view(campaign)
    assert view["state"] == "failed" and "no t2i candidates" in view["error"] and view["retryable"]
    campaign.direction = "i2t"
    campaign.save(update_fields=["direction"])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        campaign = job_retry(campaign)
    assert job_state(campaign) == JobState.QUEUED and len(queued) == 1
    campaign.build_requested_at = timezone.now() - BUILD_STALE_AFTER - timedelta(seconds=1)
    assert job_state(campaign) == JobState.STALLED
    campaign.save(update_fields=["build_requested_at"])
    with django_capture_on_commit_callbacks(execute=True):
        job_retry(campaign)
    campaign.refresh_from_db()
    assert job_state(campaign) == JobState.DONE


# ---- exports ---------------------------------------------------------------------------------------------


def test_an_export_is_queued_runs_and_is_done(django_capture_on_commit_callbacks):
    campaign = research_campaign(name="jobs-export")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        job = export_create(campaign=campaign, user=campaign.owner, format="eccv_json")
    assert job_state(job) == JobState.QUEUED
    queued[0]()
    job.refresh_from_db()
    assert job.status == ExportStatus.SUCCEEDED and job_state(job) == JobState.DONE and job.rows > 0


def test_a_failed_export_is_retried_and_a_stuck_one_is_stalled(django_capture_on_commit_callbacks):
    campaign = research_campaign(name="jobs-export-failed")
    with django_capture_on_commit_callbacks(execute=False):
        job = export_create(campaign=campaign, user=campaign.owner, format="jsonl")
    job_move(job, ExportStatus.RUNNING, started_at=timezone.now())
    assert job_state(job) == JobState.RUNNING
    job_move(job, ExportStatus.FAILED, error="storage said no")
    assert job_view(job)["state"] == "failed" and job_view(job)["error"] == "storage said no"
    with django_capture_on_commit_callbacks(execute=False) as queued:
        job = job_retry(job)
    assert job_state(job) == JobState.QUEUED and job.error == "" and len(queued) == 1
    job_move(
        job,
        ExportStatus.RUNNING,
        started_at=timezone.now() - EXPORT_STALE_AFTER - timedelta(seconds=1),
    )
    assert job_state(job) == JobState.STALLED
    with django_capture_on_commit_callbacks(execute=True):
        job_retry(job)
    job.refresh_from_db()
    assert job_state(job) == JobState.DONE and job.rows > 0


# ---- the widget and its JSON -----------------------------------------------------------------------------


def test_the_widget_renders_for_each_kind_and_its_status_follows_the_job(
    client, tmp_path, world, django_capture_on_commit_callbacks
):
    dataset, runs, owner = world
    dataset.owner = owner  # a dataset without an owner is every requester's
    dataset.save(update_fields=["owner"])
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=False):
        imported = dataset_upload(name="jobs-widget", owner=owner, **_upload_files(tmp_path))
        campaign = campaign_create(owner=owner, dataset=dataset, runs=runs, name="jobs-widget", sample_count=10)
        campaign = campaign_build_request(campaign=campaign)
        labelled = research_campaign(name="jobs-widget-export", owner=owner)
        exported = export_create(campaign=labelled, user=owner, format="jsonl")
    run = RankingRunFactory(dataset=dataset, status=RunStatus.RUNNING, started_at=timezone.now(), chunks_total=10)

    pages = {
        ("import", imported.pk): reverse("dataset-detail", args=[imported.pk]),
        ("ranking", run.pk): reverse("ranking-run", args=[run.pk]),
        ("build", campaign.pk): reverse("campaign-detail", args=[campaign.pk]),
        ("export", exported.pk): reverse("research-campaign", args=[labelled.pk]),
    }
    states = {"import": "queued", "ranking": "running", "build": "queued", "export": "queued"}
    for (kind, pk), url in pages.items():
        page = client.get(url).content.decode()
        assert _widget(page, kind, pk, states[kind]), kind
        assert "/static/js/jobs.js" in page and "<script>" not in page
        status = client.get(reverse("job-status", args=[kind, pk])).json()
        assert status["kind"] == kind and status["state"] == states[kind] and status["active"]

    # Another requester sees none of them.
    client.force_login(user_with_role(Role.REQUESTER))
    for kind, pk in pages:
        assert client.get(reverse("job-status", args=[kind, pk])).status_code == 404
    assert client.get(reverse("job-status", args=["nonsense", 1])).status_code == 404


def test_the_widget_offers_retry_for_a_stalled_run_and_the_retry_requeues_it(
    client, world, django_capture_on_commit_callbacks
):
    dataset, _runs, owner = world
    dataset.owner = owner
    dataset.save(update_fields=["owner"])
    client.force_login(owner)
    silent = timezone.now() - RUN_STALE_AFTER - timedelta(minutes=1)
    run = RankingRunFactory(dataset=dataset, status=RunStatus.RUNNING, started_at=silent)
    page = client.get(reverse("ranking-run", args=[run.pk])).content.decode()
    retry = reverse("job-retry", args=["ranking", run.pk])
    assert _widget(page, "ranking", run.pk, "stalled") and f'action="{retry}"' in page and "No sign of life" in page
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post(retry)
    assert response.status_code == 302 and response.url == reverse("ranking-run", args=[run.pk]) and len(queued) == 1
    client.force_login(user_with_role(Role.WORKER))
    assert client.post(retry).status_code == 403


def test_every_status_of_every_kind_reads_as_a_lifecycle_state():
    """A status added to a kind without a place in the lifecycle would show no state on its page."""
    from annotator.core.jobs import KINDS
    from annotator.models import CampaignStatus, DatasetStatus, ExportStatus, RunStatus

    statuses = {"import": DatasetStatus, "ranking": RunStatus, "export": ExportStatus}
    for name, choices in statuses.items():
        kind = KINDS[name]
        for status in choices.values:
            job = kind.model(status=status)
            assert kind.state(job) in JobState.values, (name, status)
    build = KINDS["build"]
    for status in CampaignStatus.values:
        campaign = build.model(status=status, build_error="", built_at=timezone.now())
        assert build.state(campaign) in (*JobState.values, None), status
