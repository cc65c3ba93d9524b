"""A run split into shards: the merge is exact, shards run in any order and on any worker, a failed or
killed shard resumes without redoing finished ones, duplicates do nothing, the sweep re-queues stalled shards."""

import random
from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from annotator import models
from annotator.core import queue, task_names
from annotator.core.jobs import job_view
from annotator.models import RankingShard, ShardStatus
from annotator.operations.services.sweep import work_sweep
from annotator.ranking.selectors.ranking import ranking_run_progress
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.lifecycle import shard_claim
from annotator.ranking.services.runs import ranking_run_retry
from tests import factories
from tests.ranking_support import candidate_rows, synthetic_dataset
from workers.ranking import pipeline
from workers.ranking.pipeline import ranking_run_execute, ranking_shard_execute

pytestmark = pytest.mark.django_db

ONE_WORKER = {"rows_per_chunk": 4, "chunks_per_shard": 10_000}  # one shard per direction, in one process
SHARDED = {"rows_per_chunk": 4, "chunks_per_shard": 2}


def new_run(dataset, kind="tfidf_pivot", top_k=6):
    annotator = annotator_register(name=kind, kind=kind)
    return factories.RankingRunFactory(dataset=dataset, annotator=annotator, top_k=top_k, status="queued")


@pytest.fixture
def messages(monkeypatch):
    """What would reach the broker after commit: (task name, args) per message."""
    sent = []
    monkeypatch.setattr(queue, "_send_or_leave_to_sweep", lambda task, args, kwargs: sent.append((task.name, args)))
    return sent


def dispatch(run, options, capture, messages) -> list[int]:
    """The coordinator as a Celery task does it: encode, plan, send one message per shard, heaviest first."""
    with capture(execute=True):
        assert ranking_run_execute(run.pk, options=options, task_id="coordinator") == models.RunStatus.RUNNING
    shards = RankingShard.objects.filter(run=run)
    assert messages == [
        (task_names.RANKING_SHARD, (pk,)) for pk in shards.order_by("-cost", "pk").values_list("pk", flat=True)
    ]
    messages.clear()
    return list(shards.order_by("pk").values_list("pk", flat=True))


@pytest.mark.parametrize("kind", ["tfidf_pivot", "minilm_pivot"])
def test_shards_run_by_many_workers_in_any_order_give_exactly_the_single_worker_candidates(
    kind, django_capture_on_commit_callbacks, messages
):
    dataset, _images, _captions = synthetic_dataset(30, seed=3)
    reference = new_run(dataset, kind)
    assert ranking_run_execute(reference.pk, options=ONE_WORKER) == models.RunStatus.SUCCEEDED
    assert RankingShard.objects.filter(run=reference).count() == 4  # i2t, t2i, t2t, i2i

    run = new_run(dataset, kind)
    shard_ids = dispatch(run, SHARDED, django_capture_on_commit_callbacks, messages)
    assert len(shard_ids) > 8
    run.refresh_from_db()
    assert run.status == models.RunStatus.RUNNING and run.chunks_done == 1  # encoded, nothing ranked yet
    random.Random(0).shuffle(shard_ids)
    for number, shard_id in enumerate(shard_ids):  # each shard on "another worker": its own task id
        assert ranking_shard_execute(shard_id, options=SHARDED, task_id=f"worker-{number}") == ShardStatus.DONE
        run.refresh_from_db()
        expected = models.RunStatus.SUCCEEDED if number == len(shard_ids) - 1 else models.RunStatus.RUNNING
        assert run.status == expected  # the last shard done finishes the run
    assert run.chunks_done == run.chunks_total
    assert candidate_rows(run) == candidate_rows(reference)
    assert len(candidate_rows(run)) > 100
    assert set(RankingShard.objects.filter(run=run).values_list("attempts", flat=True)) == {1}


def test_progress_and_eta_count_every_shard(django_capture_on_commit_callbacks, messages):
    dataset, _images, _captions = synthetic_dataset(20, seed=1)
    run = new_run(dataset)
    shard_ids = dispatch(run, SHARDED, django_capture_on_commit_callbacks, messages)
    for shard_id in shard_ids[:3]:
        ranking_shard_execute(shard_id, options=SHARDED, task_id="w")
    run.refresh_from_db()
    done = sum(RankingShard.objects.filter(pk__in=shard_ids[:3]).values_list("chunks", flat=True))
    assert run.chunks_done == 1 + done and 0 < run.chunks_done < run.chunks_total
    view = job_view(run)
    assert view["done"] == run.chunks_done and view["total"] == run.chunks_total and view["state"] == "running"
    progress = ranking_run_progress(run=run, now=run.progress["resumed_at"] + 10)
    rate = 10 / (run.chunks_done - run.progress["done_at_resume"])  # seconds per unit since this execution began
    assert progress["eta_seconds"] == pytest.approx(rate * (run.chunks_total - run.chunks_done), rel=0.01)


def test_a_failed_shard_resumes_on_retry_without_redoing_finished_shards(
    monkeypatch, django_capture_on_commit_callbacks
):
    dataset, _images, captions = synthetic_dataset(30, seed=5)
    reference = new_run(dataset)
    ranking_run_execute(reference.pk, options=ONE_WORKER)

    run = new_run(dataset)
    original = pipeline.candidates_write
    writes = []
    caption_ids = sorted(c.pk for c in captions)

    def failing_once(**kwargs):
        if kwargs["direction"] == "t2i" and int(kwargs["query_ids"][0]) == caption_ids[8] and not writes.count("boom"):
            writes.append("boom")
            raise RuntimeError("GPU fell off the bus")
        writes.append((kwargs["direction"], int(kwargs["query_ids"][0])))
        return original(**kwargs)

    monkeypatch.setattr(pipeline, "candidates_write", failing_once)
    assert ranking_run_execute(run.pk, options=SHARDED) == models.RunStatus.FAILED
    run.refresh_from_db()
    assert run.status == models.RunStatus.FAILED and "GPU fell off the bus" in run.error and "shard t2i" in run.error
    failed = RankingShard.objects.get(run=run, status=ShardStatus.FAILED)
    assert (failed.direction, failed.start, failed.chunks_done) == ("t2i", 8, 0)  # rows 8..15: its first chunk broke
    finished = {s.pk: (s.attempts, s.finished_at) for s in RankingShard.objects.filter(run=run, status="done")}
    assert finished and all(attempts == 1 for attempts, _ in finished.values())
    writes_before = len(writes)

    monkeypatch.setattr(pipeline.settings, "RANKING_CHUNKS_PER_SHARD", 2, raising=False)
    with django_capture_on_commit_callbacks(execute=True):
        ranking_run_retry(run=run)
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED, run.error
    for shard in RankingShard.objects.filter(pk__in=finished):
        assert (shard.attempts, shard.finished_at) == finished[shard.pk]  # not computed again
    failed.refresh_from_db()
    assert failed.status == ShardStatus.DONE and failed.attempts == 2
    redone = writes[writes_before:]
    assert len(redone) == run.chunks_total - 1 - sum(
        RankingShard.objects.get(pk=pk).chunks for pk in finished
    )  # exactly the chunks of the shards that were not done
    assert candidate_rows(run) == candidate_rows(reference)


def test_a_killed_shard_resumes_at_its_first_uncommitted_chunk(django_capture_on_commit_callbacks, messages):
    class Killed(BaseException):
        pass

    dataset, _images, _captions = synthetic_dataset(30, seed=2)
    reference = new_run(dataset)
    ranking_run_execute(reference.pk, options=ONE_WORKER)
    run = new_run(dataset)
    shard_ids = dispatch(run, SHARDED, django_capture_on_commit_callbacks, messages)
    target = RankingShard.objects.filter(run=run, chunks=2).order_by("-cost").first()

    def die_after_first_chunk(direction, done):
        raise Killed()

    with pytest.raises(Killed):
        ranking_shard_execute(target.pk, options=SHARDED, task_id="dying", after_unit=die_after_first_chunk)
    target.refresh_from_db()
    assert (target.status, target.chunks_done, target.attempts) == (ShardStatus.RUNNING, 1, 1)
    # A duplicate message while the shard still looks alive does nothing.
    assert ranking_shard_execute(target.pk, options=SHARDED, task_id="duplicate") == ShardStatus.RUNNING
    # Its redelivery (same task id, acks_late) resumes at chunk 2 only.
    resumed = []
    ranking_shard_execute(
        target.pk, options=SHARDED, task_id="dying", after_unit=lambda direction, done: resumed.append(done)
    )
    target.refresh_from_db()
    assert target.status == ShardStatus.DONE and target.attempts == 2
    assert resumed == [target.chunk_first + 2]
    for shard_id in shard_ids:
        ranking_shard_execute(shard_id, options=SHARDED, task_id="other")
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED
    assert candidate_rows(run) == candidate_rows(reference)


def test_a_silent_shard_is_taken_over_and_its_old_worker_stops(django_capture_on_commit_callbacks, messages):
    dataset, _images, _captions = synthetic_dataset(12, seed=4)
    run = new_run(dataset)
    shard_ids = dispatch(run, SHARDED, django_capture_on_commit_callbacks, messages)
    old = shard_claim(shard_ids[0], task_id="old")
    assert shard_claim(shard_ids[0], task_id="new") is None  # alive: a duplicate does nothing
    RankingShard.objects.filter(pk=old.pk).update(beat_at=timezone.now() - timedelta(hours=1))
    assert ranking_shard_execute(shard_ids[0], options=SHARDED, task_id="new") == ShardStatus.DONE
    execution = pipeline.ShardExecution(old, options=SHARDED, task_id="old")
    with pytest.raises(pipeline.RunStopped):  # the old worker wakes up: its next commit is refused
        execution.execute()
    assert RankingShard.objects.get(pk=old.pk).attempts == 2


def test_the_sweep_requeues_lost_and_silent_shards_only(settings, django_capture_on_commit_callbacks, messages):
    settings.SWEEP_JOB_STALE_SECONDS = 600
    settings.RANKING_SHARD_STALE_SECONDS = 600
    dataset, _images, _captions = synthetic_dataset(12, seed=4)
    run = new_run(dataset)
    lost, silent, working, *_rest = dispatch(run, SHARDED, django_capture_on_commit_callbacks, messages)
    RankingShard.objects.exclude(pk__in=[lost, silent, working]).filter(run=run).update(
        status="done", chunks_done=F("chunks")
    )
    long_ago = timezone.now() - timedelta(minutes=30)
    RankingShard.objects.filter(pk=lost).update(queued_at=long_ago)
    RankingShard.objects.filter(pk=silent).update(status="running", task_id="dead", beat_at=long_ago)
    RankingShard.objects.filter(pk=working).update(status="running", task_id="alive", beat_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        first = work_sweep()
    assert first.requeued.get("ranking_shards") == sorted([lost, silent])
    assert sorted(messages) == [(task_names.RANKING_SHARD, (lost,)), (task_names.RANKING_SHARD, (silent,))]
    messages.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert "ranking_shards" not in work_sweep().requeued  # not again on every pass
    assert messages == []
    # The re-queued silent shard's new task takes it over; the one still alive is left to its worker.
    assert ranking_shard_execute(silent, options=SHARDED, task_id="sweep-1") == ShardStatus.DONE
    assert ranking_shard_execute(working, options=SHARDED, task_id="sweep-2") == ShardStatus.RUNNING
