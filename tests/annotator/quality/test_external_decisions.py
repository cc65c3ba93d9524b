"""Approvals and rejections reach MTurk exactly once: a retried, idempotent task; failures a requester sees.

MTurk is a real boto3 `mturk` client under botocore's Stubber: every call must be queued with its answer,
and a call nobody queued fails the test. Celery runs the task eagerly, and its retries as a worker does
(eager mode that propagates errors would raise the retry instead of running it).
"""

from datetime import timedelta

import boto3
import pytest
from botocore.stub import Stubber
from celery import current_app
from django.urls import reverse
from django.utils import timezone

from annotator.crowd import mturk
from annotator.models import AssignmentStatus, CampaignStatus, ExternalDecision, ExternalDecisionStatus, Role
from annotator.operations.services.sweep import work_sweep
from annotator.quality.services.decisions import assignment_approve, assignment_reject
from annotator.quality.services.external_decisions import MAX_ATTEMPTS
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import user_with_role
from tests.task_support import run_task
from workers.tasks.mturk import external_decision_send_task

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _eager_retries(monkeypatch):
    monkeypatch.setitem(current_app.conf, "task_eager_propagates", False)


@pytest.fixture
def mturk_api(monkeypatch):
    """The stubbed client every decision is sent through; `paid` lists the ApproveAssignment calls MTurk took."""
    client = boto3.client(
        "mturk",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        endpoint_url=mturk.SANDBOX_ENDPOINT,
    )
    taken = {"ApproveAssignment": [], "RejectAssignment": []}

    def record(http_response, parsed, model, **kwargs):
        if model.name in taken and http_response.status_code < 300:
            taken[model.name].append(parsed)

    client.meta.events.register("after-call.mturk", record)
    with Stubber(client) as stubber:
        monkeypatch.setattr(mturk, "mturk_client", lambda **kwargs: client)
        stubber.taken = taken
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def mturk_assignment():
    """A submitted assignment that came from MTurk, on a live campaign."""
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, status=CampaignStatus.LIVE)
    assignment = submit(hit)
    assignment.external_assignment_id = "3MTURKASSIGN"
    assignment.save(update_fields=["external_assignment_id"])
    return assignment


def service_fault(stubber, operation="approve_assignment"):
    stubber.add_client_error(operation, service_error_code="ServiceFault", http_status_code=500)


def approve_call(stubber, **params):
    stubber.add_response("approve_assignment", {}, {"AssignmentId": "3MTURKASSIGN", **params})


def decide(django_capture_on_commit_callbacks, service, **kwargs):
    """Decide as a view does: the task is sent when the transaction commits."""
    with django_capture_on_commit_callbacks(execute=True):
        service(**kwargs)
    return ExternalDecision.objects.get(assignment=kwargs["assignment"])


def test_an_approval_that_fails_twice_and_succeeds_the_third_time_is_paid_once(
    mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    service_fault(mturk_api)
    service_fault(mturk_api)
    approve_call(mturk_api, RequesterFeedback="Good work")
    decision = decide(
        django_capture_on_commit_callbacks, assignment_approve, assignment=mturk_assignment, reason="Good work"
    )
    assert len(mturk_api.taken["ApproveAssignment"]) == 1
    assert decision.status == ExternalDecisionStatus.SENT and decision.sent_at is not None
    assert decision.attempts == 3 and decision.last_error == ""


def test_a_second_approve_of_the_same_assignment_sends_nothing_new(
    mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    approve_call(mturk_api)
    first = decide(django_capture_on_commit_callbacks, assignment_approve, assignment=mturk_assignment)
    again = decide(django_capture_on_commit_callbacks, assignment_approve, assignment=mturk_assignment)
    assert run_task(external_decision_send_task, first.pk) == ExternalDecisionStatus.SENT  # a redelivered message
    again.refresh_from_db()
    assert len(mturk_api.taken["ApproveAssignment"]) == 1
    assert (again.pk, again.status, again.attempts) == (first.pk, ExternalDecisionStatus.SENT, 1)
    assert ExternalDecision.objects.count() == 1


def test_mturk_already_having_the_approval_counts_as_sent(
    mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    """MTurk refuses to approve an approved assignment; asked, it says Approved: nothing more to send."""
    mturk_api.add_client_error(
        "approve_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted (1625139618656)",
    )
    mturk_api.add_response(
        "get_assignment",
        {"Assignment": {"AssignmentId": "3MTURKASSIGN", "AssignmentStatus": "Approved"}},
        {"AssignmentId": "3MTURKASSIGN"},
    )
    decision = decide(django_capture_on_commit_callbacks, assignment_approve, assignment=mturk_assignment)
    assert (decision.status, decision.attempts) == (ExternalDecisionStatus.SENT, 1)


def test_a_decision_that_keeps_failing_stops_after_the_last_attempt(
    mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    for _ in range(MAX_ATTEMPTS):
        service_fault(mturk_api, "reject_assignment")
    decision = decide(
        django_capture_on_commit_callbacks, assignment_reject, assignment=mturk_assignment, reason="Gold wrong"
    )
    assert (decision.status, decision.attempts) == (ExternalDecisionStatus.FAILED, MAX_ATTEMPTS)
    assert decision.last_error.startswith("ServiceFault")
    mturk_assignment.refresh_from_db()
    assert mturk_assignment.status == AssignmentStatus.REJECTED  # the local decision stands


def test_a_refused_decision_shows_on_the_review_page_and_retry_sends_it(
    client, mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    mturk_api.add_client_error(
        "approve_assignment",
        service_error_code="RequestError",
        service_message="Insufficient funds in your account.",
    )
    mturk_api.add_response(
        "get_assignment",
        {"Assignment": {"AssignmentId": "3MTURKASSIGN", "AssignmentStatus": "Submitted"}},
        {"AssignmentId": "3MTURKASSIGN"},
    )
    decision = decide(django_capture_on_commit_callbacks, assignment_approve, assignment=mturk_assignment)
    assert (decision.status, decision.attempts) == (ExternalDecisionStatus.FAILED, 1)  # refused: not retried

    campaign = mturk_assignment.hit.campaign
    client.force_login(campaign.owner)
    page = client.get(reverse("review-queue", args=[campaign.pk])).content.decode()
    assert "Decisions MTurk has not accepted" in page and "Insufficient funds in your account." in page
    retry_url = reverse("review-mturk-retry", args=[decision.pk])
    assert f'action="{retry_url}"' in page

    approve_call(mturk_api)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(retry_url)
    assert response.status_code == 302
    decision.refresh_from_db()
    assert (decision.status, decision.attempts) == (ExternalDecisionStatus.SENT, 1)
    assert len(mturk_api.taken["ApproveAssignment"]) == 1
    page = client.get(reverse("review-queue", args=[campaign.pk])).content.decode()
    assert "Decisions MTurk has not accepted" not in page
    assert client.post(retry_url).status_code == 409  # a sent decision is not sent again


def test_retry_is_for_the_campaigns_requester_only(client, mturk_api, mturk_assignment):
    decision = ExternalDecision.objects.create(
        assignment=mturk_assignment, decision="approve", status=ExternalDecisionStatus.FAILED, attempts=1
    )
    retry_url = reverse("review-mturk-retry", args=[decision.pk])
    client.force_login(user_with_role(Role.WORKER))
    assert client.post(retry_url).status_code == 403
    client.force_login(user_with_role(Role.REQUESTER))
    assert client.post(retry_url).status_code == 404
    client.force_login(mturk_assignment.hit.campaign.owner)
    assert client.get(retry_url).status_code == 405
    decision.refresh_from_db()
    assert decision.status == ExternalDecisionStatus.FAILED


def test_an_approval_after_a_sent_rejection_overrides_it_on_mturk(
    mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    mturk_api.add_response(
        "reject_assignment", {}, {"AssignmentId": "3MTURKASSIGN", "RequesterFeedback": "Gold answers wrong"}
    )
    approve_call(mturk_api, RequesterFeedback="On a second look, fine", OverrideRejection=True)
    decide(
        django_capture_on_commit_callbacks, assignment_reject, assignment=mturk_assignment, reason="Gold answers wrong"
    )
    decision = decide(
        django_capture_on_commit_callbacks,
        assignment_approve,
        assignment=mturk_assignment,
        reason="On a second look, fine",
    )
    assert (decision.decision, decision.status, decision.overrides_rejection) == ("approve", "sent", True)


def test_a_local_workers_decision_goes_nowhere(mturk_api, django_capture_on_commit_callbacks):
    assignment = submit(hit_with_gold())
    with django_capture_on_commit_callbacks(execute=True):
        assignment_approve(assignment=assignment)
    assert not ExternalDecision.objects.exists()


def test_the_sweep_sends_a_decision_whose_message_was_lost(
    mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    """The decision commits but its message never leaves (no on-commit callbacks run): the sweep sends it."""
    assignment_approve(assignment=mturk_assignment)
    decision = ExternalDecision.objects.get(assignment=mturk_assignment)
    assert decision.status == ExternalDecisionStatus.PENDING
    with django_capture_on_commit_callbacks(execute=True):
        assert work_sweep().requeued.get("mturk_decisions") is None  # not late yet
    approve_call(mturk_api)
    with django_capture_on_commit_callbacks(execute=True):
        run = work_sweep(now=timezone.now() + timedelta(hours=1))
    assert run.requeued["mturk_decisions"] == [decision.pk]
    decision.refresh_from_db()
    assert (decision.status, decision.attempts) == (ExternalDecisionStatus.SENT, 1)


def test_the_api_shows_the_decision_and_retries_a_failed_one(
    mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    from rest_framework.test import APIClient

    decision = ExternalDecision.objects.create(
        assignment=mturk_assignment,
        decision="approve",
        status=ExternalDecisionStatus.FAILED,
        attempts=MAX_ATTEMPTS,
        last_error="ServiceFault: ",
    )
    api = APIClient()
    api.force_authenticate(mturk_assignment.hit.campaign.owner)
    url = f"/api/v1/assignments/{mturk_assignment.pk}/"
    shown = api.get(url).json()["mturk_decision"]
    assert (shown["decision"], shown["status"], shown["attempts"]) == ("approve", "failed", MAX_ATTEMPTS)
    approve_call(mturk_api)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(url + "retry-mturk-decision/", {}, format="json")
    assert response.status_code == 200, response.content
    decision.refresh_from_db()
    assert (decision.status, decision.attempts) == (ExternalDecisionStatus.SENT, 1)
    assert api.get(url).json()["mturk_decision"]["status"] == "sent"
    again = api.post(url + "retry-mturk-decision/", {}, format="json")
    assert again.status_code == 409 and "only a failed one" in again.json()["error"]


def test_a_rejection_after_mturk_paid_the_approval_fails_with_the_reason(
    mturk_api, mturk_assignment, django_capture_on_commit_callbacks
):
    approve_call(mturk_api)
    mturk_api.add_client_error(
        "reject_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted (1625139618656)",
    )
    mturk_api.add_response(
        "get_assignment",
        {"Assignment": {"AssignmentId": "3MTURKASSIGN", "AssignmentStatus": "Approved"}},
        {"AssignmentId": "3MTURKASSIGN"},
    )
    decide(django_capture_on_commit_callbacks, assignment_approve, assignment=mturk_assignment)
    decision = decide(
        django_capture_on_commit_callbacks, assignment_reject, assignment=mturk_assignment, reason="Gold wrong"
    )
    assert (decision.decision, decision.status, decision.attempts) == ("reject", "failed", 1)
    assert decision.last_error.startswith("MTurk has approved this assignment and paid the worker")
    assert len(mturk_api.taken["ApproveAssignment"]) == 1
