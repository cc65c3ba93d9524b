"""/healthz against a real Redis broker (not eager): workers that answer, queue lengths, the oldest task.

The broker is a Redis of the test's own, so what is queued there is this test's alone.
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.cache import cache

from annotator.core.resilience.health import WORKERS_CACHE_KEY
from annotator.models import SweepRun
from config.celery import app as celery_app
from tests.redis_support import start_private_redis

pytestmark = pytest.mark.django_db
BASE_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture
def real_broker(monkeypatch, settings):
    """Point the Celery app at a broker for one test, the way CELERY_BROKER_URL does in production.

    Celery reads the CELERY_BROKER_URL environment variable before its own setting, so both are set.
    """
    saved = celery_app.conf.task_always_eager, celery_app.conf.broker_url, celery_app.conf.broker_transport

    def use(url):
        monkeypatch.setenv("CELERY_BROKER_URL", url)
        celery_app.conf.task_always_eager = False
        celery_app.conf.broker_url = url
        celery_app.conf.broker_transport = "config.broker:RedisTransport"
        forget_connections()

    yield use
    celery_app.conf.task_always_eager, celery_app.conf.broker_url, celery_app.conf.broker_transport = saved
    forget_connections()


def forget_connections():
    """The app keeps its connection and producer pools (broadcasts go through them); a new address needs new ones."""
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture(autouse=True)
def _no_remembered_workers():
    cache.delete(WORKERS_CACHE_KEY)  # the list of workers is cached for a few seconds between health checks


@pytest.fixture
def private_redis(tmp_path):
    server = start_private_redis(tmp_path)
    yield server
    server.stop()


def test_a_broker_without_workers_is_degraded_and_counts_what_waits(client, real_broker, private_redis):
    real_broker(f"{private_redis.url}/0")
    celery_app.send_task("workers.tasks.quality.assignment_score_task", args=[1], queue="default")
    time.sleep(0.2)
    response = client.get("/healthz")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["checks"]["broker"].startswith("ok")
    assert body["status"] == "degraded"
    assert "no Celery worker answered" in body["checks"]["workers"]
    assert body["queues"]["default"]["waiting"] == 1
    assert 0.1 <= body["queues"]["default"]["oldest_seconds"] < 30  # from the sent_at stamp of the message
    assert body["queues"]["gpu"] == {"waiting": 0, "oldest_seconds": None}


def test_a_broker_that_is_down_degrades_but_the_database_keeps_the_site_up(client, real_broker):
    real_broker("redis://127.0.0.1:1/0")  # nothing listens on port 1
    started = time.monotonic()
    response = client.get("/healthz")
    assert time.monotonic() - started < 5  # one try, no waiting on the broker
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["broker"].startswith("error")
    assert body["checks"]["database"].startswith("ok")


@pytest.mark.celery_worker
def test_a_live_worker_is_named_with_its_queues(client, real_broker, private_redis, tmp_path):
    url = f"{private_redis.url}/0"
    real_broker(url)
    SweepRun.objects.create(started_at=time_now(), finished_at=time_now())
    log = open(tmp_path / "worker.log", "w+")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default", "--pool=solo", "-n", "probe@%h"],
        cwd=BASE_DIR,
        env={**_env(), "CELERY_BROKER_URL": url},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 120  # a worker starts in seconds, but this machine may be busy
        body = {}
        while time.time() < deadline:
            body = client.get("/healthz").json()
            if body["workers"]:
                break
            time.sleep(1)
        log.seek(0)
        assert [w["queues"] for w in body["workers"]] == [["default"]], log.read()[-3000:]
        assert body["workers"][0]["name"].startswith("probe@")
        assert body["checks"]["workers"] == "ok (1 alive)"
        assert body["checks"]["sweep"].startswith("ok")
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def time_now():
    from django.utils import timezone

    return timezone.now()


def _env():
    import os

    return {k: v for k, v in os.environ.items() if k != "CELERY_TASK_ALWAYS_EAGER"} | {
        "CELERY_TASK_ALWAYS_EAGER": "false"
    }
