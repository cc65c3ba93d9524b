"""Ranking services: registering annotators, starting (enqueued after commit), cancelling and retrying runs."""

import pytest

from annotator import models
from annotator.core import jobs
from annotator.core.errors import ApplicationError
from annotator.ranking.services import runs as ranking_services
from annotator.ranking.services.annotators import annotator_register
from annotator.ranking.services.runs import ranking_run_cancel, ranking_run_retry, ranking_run_start
from tests import factories
from tests.ranking_support import ranking_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """Record what the services enqueue instead of running it (the pipeline has its own tests)."""
    calls = []
    record = lambda name, *args: calls.append((name, *args))  # noqa: E731
    monkeypatch.setattr(ranking_services, "enqueue_long_on_commit", record)
    monkeypatch.setattr(jobs, "enqueue_long_on_commit", record)  # a retry queues through the shared lifecycle
    return calls


def test_annotator_register_is_idempotent_by_name():
    first = annotator_register(name="minilm", kind="minilm_pivot")
    again = annotator_register(name="minilm", kind="minilm_pivot")
    assert first.pk == again.pk
    assert models.MachineAnnotator.objects.filter(name="minilm").count() == 1


def test_annotator_register_refuses_a_different_model_under_an_existing_name():
    annotator_register(name="mine", kind="minilm_pivot")
    with pytest.raises(ApplicationError) as error:
        annotator_register(name="mine", kind="tfidf_pivot")
    assert error.value.status == 409 and "already exists" in error.value.message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "", "kind": "tfidf_pivot"}, "name"),
        ({"name": "x", "kind": "resnet"}, "Unknown annotator kind"),
        ({"name": "x", "kind": "external"}, "Unknown annotator kind"),
        ({"name": "x", "kind": "clip"}, "needs the directory"),
        ({"name": "x", "kind": "tfidf_pivot", "checkpoint_path": "/models/x"}, "leave the checkpoint empty"),
        ({"name": "x" * 101, "kind": "tfidf_pivot"}, "at most 100"),
    ],
)
def test_annotator_register_rejects_bad_input_with_a_message(kwargs, message):
    with pytest.raises(ApplicationError) as error:
        annotator_register(**kwargs)
    assert message in error.value.message and error.value.status == 400


def test_ranking_run_start_creates_a_queued_run_and_enqueues_it_once(sent):
    dataset, _images, _captions = ranking_dataset()
    annotator = annotator_register(name="tfidf", kind="tfidf_pivot")
    user = factories.user_with_role(models.Role.REQUESTER)
    run = ranking_run_start(dataset=dataset, annotator=annotator, top_k=10, created_by=user)
    assert run.status == models.RunStatus.QUEUED and run.top_k == 10 and run.created_by == user
    assert sent == [("workers.tasks.ranking.ranking_run_task", run.pk)]
    # A double click while it is queued returns the same run, nothing enqueued twice.
    assert ranking_run_start(dataset=dataset, annotator=annotator, top_k=10).pk == run.pk
    assert len(sent) == 1


def test_the_task_runs_only_after_the_transaction_commits(django_capture_on_commit_callbacks):
    """Real enqueue (eager Celery here): nothing runs until commit, then the run executes to the end."""
    dataset, _images, _captions = ranking_dataset()
    annotator = annotator_register(name="tfidf", kind="tfidf_pivot")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = ranking_run_start(dataset=dataset, annotator=annotator, top_k=3)
    run.refresh_from_db()
    assert run.status == models.RunStatus.QUEUED and len(callbacks) == 1
    callbacks[0]()
    run.refresh_from_db()
    assert run.status == models.RunStatus.SUCCEEDED
    assert run.candidates.filter(direction="t2i").exists() and run.candidates.filter(direction="i2t").exists()


@pytest.mark.parametrize("top_k", [0, -3, 1001, "many"])
def test_ranking_run_start_rejects_a_bad_top_k(sent, top_k):
    dataset, _images, _captions = ranking_dataset()
    with pytest.raises(ApplicationError) as error:
        ranking_run_start(dataset=dataset, annotator=annotator_register(name="t", kind="tfidf_pivot"), top_k=top_k)
    assert "top_k" in error.value.message
    assert sent == []


def test_ranking_run_start_needs_a_ready_dataset_with_content(sent):
    annotator = annotator_register(name="t", kind="tfidf_pivot")
    importing = factories.DatasetFactory(status=models.DatasetStatus.IMPORTING)
    with pytest.raises(ApplicationError) as error:
        ranking_run_start(dataset=importing, annotator=annotator)
    assert error.value.status == 409
    with pytest.raises(ApplicationError, match="no images or no captions"):
        ranking_run_start(dataset=factories.DatasetFactory(), annotator=annotator)
    external = factories.MachineAnnotatorFactory(kind=models.AnnotatorKind.EXTERNAL)
    dataset, _images, _captions = ranking_dataset()
    with pytest.raises(ApplicationError, match="cannot rank"):
        ranking_run_start(dataset=dataset, annotator=external)
    assert sent == []


def test_cancel_then_retry_requeues_and_enqueues_again(sent):
    dataset, _images, _captions = ranking_dataset()
    run = ranking_run_start(dataset=dataset, annotator=annotator_register(name="t", kind="tfidf_pivot"))
    cancelled = ranking_run_cancel(run=run)
    assert cancelled.status == models.RunStatus.CANCELLED and cancelled.finished_at
    assert ranking_run_cancel(run=run).status == models.RunStatus.CANCELLED  # idempotent
    retried = ranking_run_retry(run=run)
    assert retried.status == models.RunStatus.QUEUED and retried.finished_at is None
    assert ranking_run_retry(run=run).status == models.RunStatus.QUEUED  # idempotent, not enqueued twice
    assert [call[1] for call in sent] == [run.pk, run.pk]


def test_finished_runs_cannot_be_cancelled_or_retried():
    succeeded = factories.RankingRunFactory(status=models.RunStatus.SUCCEEDED)
    with pytest.raises(ApplicationError) as error:
        ranking_run_cancel(run=succeeded)
    assert error.value.status == 409
    with pytest.raises(ApplicationError) as error:
        ranking_run_retry(run=succeeded)
    assert error.value.status == 409
    running = factories.RankingRunFactory(status=models.RunStatus.RUNNING)
    with pytest.raises(ApplicationError, match="cancel it first"):
        ranking_run_retry(run=running)
