"""POST /api/v1/runs/ answers 202 at once; on eager Celery (the embedded default) the run ranks in a thread.

Nothing is faked: the ranking is the real tfidf pipeline. To see that the request did not wait for it, a
Celery task_prerun receiver holds the ranking task until the test has its answer; a request that ran the
task itself would be the one held (until the receiver gives up), and the task would run in the test's thread.
"""

import json
import threading
import time

import pytest
from celery.signals import task_prerun
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator import models
from annotator.core import task_names
from annotator.core.queue import enqueue_in_background_on_commit
from annotator.ranking.services.annotators import annotator_register
from config.celery import app as celery_app
from tests import factories
from tests.ranking_support import ranking_dataset
from tests.redis_support import start_private_redis

pytestmark = pytest.mark.django_db(transaction=True)  # the run is handed over when the request commits


@pytest.fixture
def requester_client():
    user = factories.user_with_role(models.Role.REQUESTER, username="ranker")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return user, client


@pytest.fixture
def held_ranking():
    """Holds the ranking task at its start until `release` is set; records the thread it runs in."""
    state = {"started": threading.Event(), "release": threading.Event(), "thread": None}

    def hold(sender=None, **kwargs):
        if sender is not None and sender.name == task_names.RANKING_RUN:
            state["thread"] = threading.current_thread()
            state["started"].set()
            state["release"].wait(timeout=30)

    task_prerun.connect(hold, weak=False)
    yield state
    state["release"].set()
    task_prerun.disconnect(hold)


def _background_threads():
    name = f"background {task_names.RANKING_RUN}"
    return [thread for thread in threading.enumerate() if thread.name.startswith(name)]


def test_post_answers_202_with_the_queued_run_and_the_run_completes_afterwards(requester_client, held_ranking):
    assert celery_app.conf.task_always_eager  # the embedded default's mode, where the ranking used to block
    user, client = requester_client
    dataset, _images, _captions = ranking_dataset()
    dataset.owner = user
    dataset.save()
    annotator = annotator_register(name="lexical", kind="tfidf_pivot")

    began = time.monotonic()
    response = client.post("/api/v1/runs/", {"dataset": dataset.pk, "annotator": annotator.pk, "top_k": 3})
    answered_in = time.monotonic() - began

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued" and response["Location"] == body["url"]
    assert answered_in < 10  # the held task would keep a request that waits for it for 30 s
    assert held_ranking["started"].wait(timeout=10), "the run was never handed to a background thread"
    assert held_ranking["thread"] is not threading.current_thread()
    assert models.RankingRun.objects.get(pk=body["id"]).status == models.RunStatus.QUEUED

    held_ranking["release"].set()
    for thread in _background_threads():
        thread.join(timeout=120)
    finished = client.get(body["url"]).json()
    assert finished["status"] == "succeeded", finished
    assert finished["progress_fraction"] == 1.0
    assert models.Candidate.objects.filter(run_id=body["id"]).exists()


def test_a_second_post_while_the_run_is_queued_answers_the_same_run(requester_client, held_ranking):
    user, client = requester_client
    dataset, _images, _captions = ranking_dataset()
    dataset.owner = user
    dataset.save()
    annotator = annotator_register(name="lexical", kind="tfidf_pivot")
    payload = {"dataset": dataset.pk, "annotator": annotator.pk, "top_k": 3}

    first = client.post("/api/v1/runs/", payload)
    second = client.post("/api/v1/runs/", payload)

    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    held_ranking["release"].set()
    for thread in _background_threads():
        thread.join(timeout=120)
    assert models.RankingRun.objects.filter(dataset=dataset).count() == 1


@pytest.fixture
def real_broker(tmp_path, monkeypatch):
    """Celery on a Redis of the test's own, not eager: what production runs."""
    server = start_private_redis(tmp_path)
    monkeypatch.setenv("CELERY_BROKER_URL", f"{server.url}/0")  # Celery reads it before its own setting
    saved = celery_app.conf.task_always_eager, celery_app.conf.broker_url, celery_app.conf.broker_transport
    celery_app.conf.task_always_eager = False
    celery_app.conf.broker_url = f"{server.url}/0"
    celery_app.conf.broker_transport = "config.broker:RedisTransport"
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    yield server
    celery_app.conf.task_always_eager, celery_app.conf.broker_url, celery_app.conf.broker_transport = saved
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    server.stop()


def test_with_a_broker_the_task_is_only_enqueued_on_the_gpu_queue(real_broker):
    enqueue_in_background_on_commit(task_names.RANKING_RUN, 12345)

    assert not _background_threads()
    messages = real_broker.client().lrange("gpu", 0, -1)
    assert len(messages) == 1
    assert json.loads(messages[0])["headers"]["task"] == task_names.RANKING_RUN
