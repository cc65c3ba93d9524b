"""Campaign builds as a Celery task: claimed on the campaign row, so a duplicated task does nothing twice,
and a failed build is recorded on the campaign (back to draft, build_error), never left `building`."""

import contextlib
import threading

import pytest
from django.db import connection, connections, transaction

from annotator.campaigns.services.build import campaign_build_request
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.models import Campaign, CampaignStatus, Hit, Pair, Role
from tests.annotator.campaign_support import add_run, campaign_snapshot, make_dataset
from tests.factories import user_with_role
from tests.task_support import run_task
from workers.tasks.campaigns import campaign_build_task


@pytest.fixture
def draft():
    dataset = make_dataset(images=30)
    runs = [add_run(dataset=dataset, name=f"task-{i}", seed=i, directions=("i2t",)) for i in range(2)]
    owner = user_with_role(Role.REQUESTER)
    return campaign_create(owner=owner, dataset=dataset, runs=runs, name="queued", sample_count=12)


@contextlib.contextmanager
def row_lock_held_elsewhere(campaign_id: int):
    """Another connection holds the campaign's row lock (as a build under way does) while the block runs."""
    locked, release = threading.Event(), threading.Event()

    def holder():
        try:
            with transaction.atomic():
                Campaign.objects.select_for_update().get(pk=campaign_id)
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert locked.wait(30)
        yield
    finally:
        release.set()
        thread.join(30)


def _queue(campaign: Campaign, capture) -> Campaign:
    """Request the build without running the task (as a web process with a real broker would)."""
    with capture(execute=False):
        campaign = campaign_build_request(campaign=campaign)
    assert campaign.status == CampaignStatus.BUILDING
    return campaign


def test_the_task_is_acks_late_with_time_limits():
    assert campaign_build_task.acks_late and campaign_build_task.reject_on_worker_lost
    assert campaign_build_task.time_limit and campaign_build_task.soft_time_limit < campaign_build_task.time_limit


@pytest.mark.django_db
def test_a_duplicated_task_does_nothing_the_second_time(draft, django_capture_on_commit_callbacks):
    campaign = _queue(draft, django_capture_on_commit_callbacks)
    assert run_task(campaign_build_task, campaign.pk) == CampaignStatus.BUILT
    built = Campaign.objects.get(pk=campaign.pk)
    pairs = set(Pair.objects.filter(campaign=campaign).values_list("pk", flat=True))
    hits = set(Hit.objects.filter(campaign=campaign).values_list("pk", flat=True))
    assert pairs and hits
    assert run_task(campaign_build_task, campaign.pk) == CampaignStatus.BUILT
    again = Campaign.objects.get(pk=campaign.pk)
    assert set(Pair.objects.filter(campaign=campaign).values_list("pk", flat=True)) == pairs
    assert set(Hit.objects.filter(campaign=campaign).values_list("pk", flat=True)) == hits
    assert again.built_at == built.built_at and again.build_report == built.build_report
    assert run_task(campaign_build_task, 999999) == "missing"


@pytest.mark.django_db
def test_a_task_for_a_campaign_not_building_leaves_it_alone(draft):
    assert run_task(campaign_build_task, draft.pk) == CampaignStatus.DRAFT
    assert not draft.hits.exists()


@pytest.mark.django_db
def test_a_failed_build_goes_back_to_draft_with_the_reason(draft, django_capture_on_commit_callbacks):
    Campaign.objects.filter(pk=draft.pk).update(direction="t2i")  # the runs have i2t candidates only
    campaign = _queue(Campaign.objects.get(pk=draft.pk), django_capture_on_commit_callbacks)
    assert run_task(campaign_build_task, campaign.pk) == CampaignStatus.DRAFT
    campaign.refresh_from_db()
    assert campaign.build_error == "The chosen runs have no t2i candidates for this campaign."
    assert not campaign.hits.exists() and not campaign.pairs.exists()
    # Building again clears the error once it succeeds.
    Campaign.objects.filter(pk=draft.pk).update(direction="i2t")
    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_build_request(campaign=campaign)
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.BUILT and campaign.build_error == ""


@pytest.mark.django_db
def test_an_unexpected_error_is_recorded_too_and_the_old_build_is_kept(
    draft, django_capture_on_commit_callbacks, monkeypatch
):
    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_build_request(campaign=draft)
    assert Campaign.objects.get(pk=campaign.pk).status == CampaignStatus.BUILT
    before = campaign_snapshot(campaign)
    Campaign.objects.filter(pk=campaign.pk).update(pool_depth=3)  # options changed: a real rebuild
    campaign = _queue(Campaign.objects.get(pk=campaign.pk), django_capture_on_commit_callbacks)
    from annotator.campaigns.services import build as services

    def broken(**kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(services, "campaign_extend", broken)
    assert run_task(campaign_build_task, campaign.pk) == CampaignStatus.DRAFT
    campaign.refresh_from_db()
    assert campaign.build_error == "The build stopped: OSError: disk full"
    assert campaign_snapshot(campaign) == before  # the failed rebuild's deletes were rolled back


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_duplicate_delivered_while_the_build_runs_skips_it(draft):
    """The running build holds the row lock; a duplicate skips the locked row at once instead of waiting."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks")
    Campaign.objects.filter(pk=draft.pk).update(status=CampaignStatus.BUILDING)
    with row_lock_held_elsewhere(draft.pk):
        results = [run_task(campaign_build_task, draft.pk)]
    assert results == [CampaignStatus.BUILDING] and not draft.hits.exists()
    assert run_task(campaign_build_task, draft.pk) == CampaignStatus.BUILT


@pytest.mark.django_db
def test_a_lost_build_can_be_queued_again_once_it_stalled(draft, django_capture_on_commit_callbacks):
    """A worker that dies mid-build rolls the build back but leaves the campaign `building`: after
    BUILD_STALE_AFTER its requester may queue it again (before that, a second request is a 409)."""
    from django.utils import timezone

    from annotator.core.errors import ApplicationError
    from annotator.core.jobs import BUILD_STALE_AFTER, job_stalled

    campaign = _queue(draft, django_capture_on_commit_callbacks)  # queued, and its task never runs
    assert not job_stalled(campaign)
    with pytest.raises(ApplicationError, match="being built already") as refused:
        campaign_build_request(campaign=campaign)
    assert refused.value.status == 409
    long_ago = timezone.now() - BUILD_STALE_AFTER - timezone.timedelta(seconds=1)
    Campaign.objects.filter(pk=campaign.pk).update(build_requested_at=long_ago)
    campaign.refresh_from_db()
    assert job_stalled(campaign)
    with django_capture_on_commit_callbacks(execute=True) as queued:
        again = campaign_build_request(campaign=campaign)
    assert len(queued) == 1 and again.build_requested_at > long_ago
    again.refresh_from_db()
    assert again.status == CampaignStatus.BUILT and again.hits.exists()  # the queued-again build ran


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_build_request_while_a_worker_builds_is_a_409_at_once(draft):
    """The running build holds the row lock; a request (even for a stalled-looking build) does not wait."""
    from django.utils import timezone

    from annotator.core.errors import ApplicationError

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks")
    Campaign.objects.filter(pk=draft.pk).update(
        status=CampaignStatus.BUILDING, build_requested_at=timezone.now() - timezone.timedelta(hours=1)
    )
    with row_lock_held_elsewhere(draft.pk):
        with pytest.raises(ApplicationError, match="being built right now") as refused:
            campaign_build_request(campaign=draft)
    assert refused.value.status == 409
