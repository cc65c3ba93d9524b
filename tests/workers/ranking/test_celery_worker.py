"""A ranking runs end to end through a real Celery worker process on Redis and the real PostgreSQL."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from annotator import models
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.runs import ranking_run_start
from tests.ranking_support import ranking_dataset

pytestmark = [pytest.mark.celery_worker, pytest.mark.postgres]
ROOT = Path(__file__).resolve().parents[3]


def database_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def celery_worker_process(transactional_db, settings, tmp_path):
    """`celery -A config worker -Q gpu,default --pool=solo` on the pytest database; killed afterwards."""
    with worker_processes(settings, tmp_path, count=1) as workers:
        yield workers[0]


@pytest.fixture
def two_gpu_workers(transactional_db, settings, tmp_path):
    """Two worker processes on the same queues, as two GPU machines would be."""
    with worker_processes(settings, tmp_path, count=2, extra_env={"RANKING_CHUNKS_PER_SHARD": "1"}) as workers:
        yield workers


@contextlib.contextmanager
def worker_processes(settings, tmp_path, *, count: int, extra_env: dict | None = None):
    if connection.vendor != "postgresql" or not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs PostgreSQL and a Redis broker (DATABASE_URL, CELERY_BROKER_URL)")
    from celery import current_app

    # No purge: the broker may be shared with other tests; a stale message names a run id that does not
    # exist here (or is finished), and the task then does nothing.
    env = {
        **os.environ,
        **(extra_env or {}),
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "RANKING_CHUNK_ROWS": "4",
    }
    workers = []
    for number in range(count):
        log = open(tmp_path / f"worker-{number}.log", "w+")
        workers.append((start_worker(env, log, f"w{number}@%h"), log))
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False  # this process sends to the broker like the web server does
    try:
        yield workers
    finally:
        current_app.conf.task_always_eager = eager
        for worker, _log in workers:
            os.killpg(worker.pid, signal.SIGTERM)
        for worker, log in workers:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
            log.close()


def start_worker(env: dict, log, name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            "gpu,default",
            "--pool=solo",
            "-n",
            name,
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-l",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_ranking_run_executes_on_a_real_worker_from_the_gpu_queue(celery_worker_process):
    worker, log = celery_worker_process
    dataset, images, captions = ranking_dataset()
    run = ranking_run_start(dataset=dataset, annotator=annotator_register(name="tfidf", kind="tfidf_pivot"), top_k=4)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status not in (models.RunStatus.QUEUED, models.RunStatus.RUNNING) or worker.poll() is not None:
            break
        time.sleep(0.5)
    log.seek(0)
    output = log.read()
    assert run.status == models.RunStatus.SUCCEEDED, f"{run.status} {run.error}\n{output[-3000:]}"
    assert "workers.tasks.ranking.ranking_run_task" in output and "[queues]" in output and ".> gpu" in output
    # 17 captions in one shard; i2t: 8 images by 4; t2i and t2t: 17 captions by 4; i2i: 8 images by 4
    assert run.chunks_done == run.chunks_total == 1 + 2 + 5 + 5 + 2
    # The worker's candidates are exactly what the same run computes in-process.
    from tests import factories
    from tests.ranking_support import candidate_rows
    from workers.ranking.pipeline import ranking_run_execute

    local = factories.RankingRunFactory(dataset=dataset, annotator=run.annotator, top_k=4, status="queued")
    assert ranking_run_execute(local.pk, options={"rows_per_chunk": 4}) == models.RunStatus.SUCCEEDED
    assert candidate_rows(run) == candidate_rows(local)
    assert models.Candidate.objects.filter(run=run, direction="t2i").values("query_id").distinct().count() >= 14


def test_two_workers_share_one_run_and_give_the_single_process_candidates(two_gpu_workers):
    dataset, images, captions = ranking_dataset()
    run = ranking_run_start(dataset=dataset, annotator=annotator_register(name="tfidf", kind="tfidf_pivot"), top_k=4)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status not in (models.RunStatus.QUEUED, models.RunStatus.RUNNING):
            break
        time.sleep(0.5)
    logs = []
    for _worker, log in two_gpu_workers:
        log.seek(0)
        logs.append(log.read())
    assert run.status == models.RunStatus.SUCCEEDED, f"{run.status} {run.error}\n{logs[0][-2000:]}\n{logs[1][-2000:]}"
    shards = models.RankingShard.objects.filter(run=run)
    assert shards.count() == 2 + 5 + 5 + 2 and set(shards.values_list("status", flat=True)) == {"done"}
    assert len(set(shards.values_list("worker", flat=True))) == 2  # both processes ranked shards
    assert all("ranking_shard_task" in output for output in logs)
    from tests import factories
    from tests.ranking_support import candidate_rows
    from workers.ranking.pipeline import ranking_run_execute

    local = factories.RankingRunFactory(dataset=dataset, annotator=run.annotator, top_k=4, status="queued")
    assert ranking_run_execute(local.pk, options={"rows_per_chunk": 4, "chunks_per_shard": 100}) == "succeeded"
    assert candidate_rows(run) == candidate_rows(local)
