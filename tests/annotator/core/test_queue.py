"""Enqueue after commit: a broker that is down never turns a committed write into an error."""

import logging

import pytest
from django.db import transaction
from django.urls import reverse

from annotator.core import task_names
from annotator.core.queue import enqueue_on_commit
from annotator.crowd.selectors.work import hit_item_tokens
from annotator.models import Assignment, AssignmentStatus, Dataset
from annotator.operations.services.sweep import work_sweep
from config.celery import app as celery_app
from tests.annotator.crowd.test_work_views import claim, post_json, worker_client
from tests.factories import DatasetFactory, live_campaign_with_hits

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_down(monkeypatch):
    """A real Redis broker address where nothing listens, as while Redis restarts."""
    saved = celery_app.conf.task_always_eager, celery_app.conf.broker_url, celery_app.conf.broker_transport
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")
    celery_app.conf.task_always_eager = False
    celery_app.conf.broker_url = "redis://127.0.0.1:1/0"
    celery_app.conf.broker_transport = "config.broker:RedisTransport"
    forget_connections()
    yield
    celery_app.conf.task_always_eager, celery_app.conf.broker_url, celery_app.conf.broker_transport = saved
    forget_connections()


def forget_connections():
    """The app keeps its connection and producer pools; a new broker address needs new ones."""
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


def test_inside_a_transaction_a_failed_send_is_logged_and_the_write_stays(
    broker_down, django_capture_on_commit_callbacks, caplog
):
    with (
        caplog.at_level(logging.ERROR, logger="annotator.core.queue"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        with transaction.atomic():
            dataset = DatasetFactory(name="kept")
            enqueue_on_commit(task_names.ASSIGNMENT_SCORE, 1)
    assert Dataset.objects.filter(pk=dataset.pk).exists()
    assert "the sweep will pick the work up" in caplog.text


def test_outside_a_transaction_the_caller_hears_of_it(broker_down, monkeypatch):
    from django.db import transaction as db_transaction

    class NotInAtomic:
        in_atomic_block = False

    monkeypatch.setattr(db_transaction, "get_connection", lambda using=None: NotInAtomic())
    with pytest.raises(Exception, match="111|refused|Connection"):  # kombu's OperationalError
        enqueue_on_commit(task_names.ASSIGNMENT_SCORE, 1)


def test_a_submit_while_the_broker_is_down_is_a_200_and_the_sweep_scores_it(
    broker_down, django_capture_on_commit_callbacks, settings
):
    settings.SWEEP_SCORE_AFTER_SECONDS = 0
    campaign = live_campaign_with_hits(hits=1)
    client, _worker = worker_client(campaign)
    assignment = claim(client, campaign)
    answers = [
        {"item_token": token, "choice": "yes", "seconds_spent": 5} for token in hit_item_tokens(hit=assignment.hit)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(client, reverse("work_submit", args=[assignment.pk]), {"answers": answers})
    assert response.status_code == 200, response.content
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED and assignment.scored_at is None
    assert work_sweep().scored == 1
    assert Assignment.objects.get(pk=assignment.pk).scored_at is not None
