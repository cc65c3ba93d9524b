"""Gold scoring as a Celery task: acks_late + idempotent, so a worker killed mid-task loses nothing."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from annotator.models import Assignment, Worker
from tests.annotator.quality_support import hit_with_gold, submit
from workers.tasks import quality as tasks

ROOT = Path(__file__).resolve().parents[2]


class WorkerKilled(BaseException):
    """Stands for SIGKILL: not an Exception, so nothing in the service can catch it."""


def test_tasks_are_acks_late_with_time_limits():
    for task in (tasks.assignment_score_task, tasks.assignments_auto_approve_task, tasks.labels_aggregate_task):
        assert task.acks_late and task.reject_on_worker_lost
        assert task.time_limit and task.soft_time_limit < task.time_limit


@pytest.mark.django_db(transaction=True)
def test_a_run_killed_mid_transaction_leaves_nothing_and_the_redelivery_scores_once(monkeypatch):
    assignment = submit(hit_with_gold(), gold_negative="yes", candidate="no")
    from annotator.quality.services import scoring as quality

    def die(**kwargs):
        raise WorkerKilled()

    with monkeypatch.context() as patch:
        patch.setattr(quality, "worker_trust_refresh", die)  # dies after the counters moved, before commit
        with pytest.raises(WorkerKilled):
            tasks.assignment_score_task.run(assignment.pk)
    assignment.refresh_from_db()
    worker = Worker.objects.get(pk=assignment.worker_id)
    assert assignment.scored_at is None and (worker.gold_correct, worker.gold_total) == (0, 0)
    tasks.assignment_score_task.run(assignment.pk)  # the broker redelivers the unacknowledged message
    tasks.assignment_score_task.run(assignment.pk)  # and perhaps once more: nothing changes
    assignment.refresh_from_db()
    worker.refresh_from_db()
    assert assignment.scored_at is not None and assignment.flags
    assert (worker.gold_correct, worker.gold_total) == (1, 2)


def _database_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _start_worker(settings, tmp_path, name, **env):
    log = open(tmp_path / f"{name}.log", "w+")
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "workers" / "quality_worker_launcher.py")],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": _database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            **env,
        },
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return process, log


def _stop(process, sig=signal.SIGTERM):
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.celery_worker
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_sigkill_mid_task_then_a_new_worker_finishes_the_job(settings, tmp_path):
    """A real worker is SIGKILLed inside the scoring transaction; Redis redelivers to the next worker."""
    if connection.vendor != "postgresql" or not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs PostgreSQL and a Redis broker (DATABASE_URL, CELERY_BROKER_URL)")
    import redis
    from celery import current_app

    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    assignment = submit(hit_with_gold(), candidate="no", gold_positive="mostly_no")
    mark = tmp_path / "inside"
    first, first_log = _start_worker(settings, tmp_path, "first", SLOW_SCORING_MARK=str(mark))
    second = None
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False
    try:
        tasks.assignment_score_task.delay(assignment.pk)
        deadline = time.monotonic() + 90
        while not mark.exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
        first_log.seek(0)
        assert mark.exists(), first_log.read()[-3000:]
        _stop(first, signal.SIGKILL)  # the worker dies holding the message, unacknowledged
        assignment.refresh_from_db()
        assert assignment.scored_at is None  # its transaction died with it
        second, second_log = _start_worker(settings, tmp_path, "second")
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assignment.refresh_from_db()
            if assignment.scored_at is not None:
                break
            time.sleep(0.5)
        second_log.seek(0)
        assert assignment.scored_at is not None, second_log.read()[-3000:]
        worker = Worker.objects.get(pk=assignment.worker_id)
        assert (worker.gold_correct, worker.gold_total) == (1, 2)  # counted once
        assert Assignment.objects.get(pk=assignment.pk).flags == ["gold_failed"]
    finally:
        current_app.conf.task_always_eager = eager
        _stop(first, signal.SIGKILL)
        if second is not None:
            _stop(second)
