"""The sweep: submissions whose scoring message was lost get scored, stalled jobs are queued again once."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.labels.services.exports.jobs import export_run
from annotator.models import (
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignStatus,
    Dataset,
    DatasetStatus,
    ExportStatus,
    RequeueKind,
    RunStatus,
    SweepRequeue,
    SweepRun,
    Worker,
)
from annotator.operations.services import sweep as sweep_service
from annotator.operations.services.sweep import work_sweep
from tests.annotator.datasets.test_dataset_upload import queued
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import ExportJobFactory, RankingRunFactory, user_with_role
from tests.workers.test_campaign_tasks import _queue, draft  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def submitted_ago(hit, seconds: float, **answers) -> Assignment:
    assignment = submit(hit, **answers)
    Assignment.objects.filter(pk=assignment.pk).update(submitted_at=timezone.now() - timedelta(seconds=seconds))
    return assignment


def test_a_submission_whose_score_never_came_is_scored_once_and_the_worker_trust_moves(settings):
    settings.SWEEP_SCORE_AFTER_SECONDS = 60
    hit = hit_with_gold(redundancy=3)
    lost = submitted_ago(hit, 90)  # its scoring message was lost
    recent = submitted_ago(hit, 5)  # its task is probably on the way: left to it
    sweep = work_sweep()
    lost.refresh_from_db()
    recent.refresh_from_db()
    assert lost.scored_at is not None and lost.gold_total == 2 and lost.gold_correct == 2
    assert recent.scored_at is None
    assert Worker.objects.get(pk=lost.worker_id).gold_total == 2
    assert sweep.scored == 1 and SweepRun.objects.count() == 1
    again = work_sweep()
    assert again.scored == 0
    assert Worker.objects.get(pk=lost.worker_id).gold_total == 2  # scored once, whatever the duplicates


def test_work_a_requester_decided_before_scoring_is_scored_without_being_decided_again(settings):
    settings.SWEEP_SCORE_AFTER_SECONDS = 60
    hit = hit_with_gold(redundancy=3)
    decided = submitted_ago(hit, 120, gold_positive="no")
    Assignment.objects.filter(pk=decided.pk).update(status=AssignmentStatus.APPROVED, decided_at=timezone.now())
    assert work_sweep().scored == 1
    decided.refresh_from_db()
    assert decided.status == AssignmentStatus.APPROVED and decided.scored_at is not None
    assert decided.gold_correct == 1 and decided.flags == ["gold_failed"]


def test_the_sweep_releases_expired_leases():
    hit = hit_with_gold()
    lease = submit(hit)
    Assignment.objects.filter(pk=lease.pk).update(
        status=AssignmentStatus.RESERVED, submitted_at=None, expires_at=timezone.now() - timedelta(minutes=1)
    )
    assert work_sweep().expired == 1
    assert Assignment.objects.get(pk=lease.pk).status == AssignmentStatus.EXPIRED


def test_a_stalled_import_is_queued_again_by_the_sweep_and_finishes(django_capture_on_commit_callbacks):
    requester = user_with_role("requester", username="sweep-uploader")
    dataset = queued("swept", requester, django_capture_on_commit_callbacks)  # its task never ran
    assert work_sweep().requeued == {}  # not stalled yet
    Dataset.objects.filter(pk=dataset.pk).update(updated_at=timezone.now() - timedelta(minutes=11))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        sweep = work_sweep()
    assert sweep.requeued == {"imports": [dataset.pk]} and len(callbacks) == 1
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY and dataset.images.count() == 2
    assert SweepRequeue.objects.get(kind=RequeueKind.IMPORT, object_id=dataset.pk).times == 1


def test_a_stalled_build_is_queued_again_once_per_stale_period(draft, django_capture_on_commit_callbacks):  # noqa: F811
    campaign = _queue(draft, django_capture_on_commit_callbacks)
    Campaign.objects.filter(pk=campaign.pk).update(build_requested_at=timezone.now() - timedelta(minutes=11))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = work_sweep()
        second = work_sweep()  # build_requested_at moved: not stalled any more
    assert first.requeued == {"builds": [campaign.pk]} and second.requeued == {}
    assert len(callbacks) == 1
    for callback in callbacks:
        callback()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.BUILT and campaign.hits.exists()


def test_ranking_runs_are_queued_again_when_queued_too_long_or_silent(settings, django_capture_on_commit_callbacks):
    settings.SWEEP_JOB_STALE_SECONDS = 600
    waiting = RankingRunFactory(status=RunStatus.QUEUED)
    fresh = RankingRunFactory(status=RunStatus.QUEUED)
    silent = RankingRunFactory(status=RunStatus.RUNNING, started_at=timezone.now() - timedelta(hours=2))
    working = RankingRunFactory(
        status=RunStatus.RUNNING, started_at=timezone.now() - timedelta(hours=2), progress={"beat_at": time.time()}
    )
    type(waiting).objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(minutes=11))
    with django_capture_on_commit_callbacks(execute=False) as sent:
        first = work_sweep()
    assert first.requeued == {"ranking_runs": [waiting.pk, silent.pk]} and len(sent) == 2
    assert fresh.pk not in first.requeued["ranking_runs"] and working.pk not in first.requeued["ranking_runs"]
    with django_capture_on_commit_callbacks(execute=False) as again:
        assert work_sweep().requeued == {}  # queued again already: not on every pass
    assert not again


def test_exports_are_queued_again_and_a_duplicate_leaves_a_running_one_alone(
    settings, django_capture_on_commit_callbacks
):
    settings.SWEEP_JOB_STALE_SECONDS = 600
    lost = ExportJobFactory(status=ExportStatus.QUEUED)
    type(lost).objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(minutes=11))
    running = ExportJobFactory(status=ExportStatus.RUNNING, started_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert work_sweep().requeued == {"exports": [lost.pk]}
    assert len(sent) == 1
    assert export_run(export_id=running.pk).status == ExportStatus.RUNNING  # a duplicate does nothing
    running.refresh_from_db()
    assert running.started_at is not None and not running.file


def test_a_broken_assignment_does_not_keep_the_others_unscored(settings, monkeypatch):
    settings.SWEEP_SCORE_AFTER_SECONDS = 60
    hit = hit_with_gold(redundancy=3)
    broken, fine = submitted_ago(hit, 200), submitted_ago(hit, 100)
    real_score = sweep_service.assignment_score

    def score(*, assignment_id):
        if assignment_id == broken.pk:
            raise ValueError("corrupt row")
        return real_score(assignment_id=assignment_id)

    monkeypatch.setattr(sweep_service, "assignment_score", score)
    sweep = work_sweep()
    assert sweep.scored == 1 and Assignment.objects.get(pk=fine.pk).scored_at is not None
    assert sweep.problems == [f"assignment {broken.pk} could not be scored: ValueError: corrupt row"]
