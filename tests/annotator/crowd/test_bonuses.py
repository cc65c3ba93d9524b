"""Bonuses and messages to workers: the rules, the constraints, spend, and SendBonus / NotifyWorkers on MTurk.

MTurk is a real boto3 `mturk` client under botocore's Stubber: every call must be queued with its answer and
its exact parameters, and a call nobody queued fails the test.
"""

import boto3
import pytest
from botocore.stub import ANY, Stubber
from celery import current_app
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from annotator.campaigns.selectors.crowd_work import campaign_spend
from annotator.core.errors import ApplicationError
from annotator.crowd import mturk
from annotator.crowd.services.bonuses import MAX_ATTEMPTS, bonus_give, worker_message_send
from annotator.models import Bonus, CampaignStatus, PayoutStatus, Role, WorkerMessage
from annotator.quality.services.decisions import assignment_approve
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import WorkerFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _eager_retries(monkeypatch):
    monkeypatch.setitem(current_app.conf, "task_eager_propagates", False)


@pytest.fixture
def mturk_api(monkeypatch):
    client = boto3.client(
        "mturk",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        endpoint_url=mturk.SANDBOX_ENDPOINT,
    )
    sent = []
    client.meta.events.register(
        "before-parameter-build.mturk.SendBonus", lambda params, **kwargs: sent.append(dict(params))
    )
    with Stubber(client) as stubber:
        monkeypatch.setattr(mturk, "mturk_client", lambda **kwargs: client)
        stubber.sent_bonuses = sent
        yield stubber
        stubber.assert_no_pending_responses()


def approved(*, external: bool = False, **campaign_options):
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, status=CampaignStatus.LIVE, **campaign_options)
    worker = WorkerFactory(external_id="AWORKER1" if external else None)
    assignment = submit(hit, worker=worker)
    if external:
        assignment.external_assignment_id = "3MTURKASSIGN"
        assignment.save(update_fields=["external_assignment_id"])
    return assignment_approve(assignment=assignment)


def give(assignment, django_capture_on_commit_callbacks=None, **kwargs):
    kwargs = {"amount_cents": 150, "reason": "Careful work", "idempotency_key": "k1", **kwargs}
    campaign = assignment.hit.campaign
    if django_capture_on_commit_callbacks is None:
        return bonus_give(campaign=campaign, assignment=assignment, **kwargs)
    with django_capture_on_commit_callbacks(execute=True):
        bonus = bonus_give(campaign=campaign, assignment=assignment, **kwargs)
    bonus.refresh_from_db()
    return bonus


def send_bonus_call(stubber):
    stubber.add_response(
        "send_bonus",
        {},
        {
            "WorkerId": "AWORKER1",
            "BonusAmount": "1.50",
            "AssignmentId": "3MTURKASSIGN",
            "Reason": "Careful work",
            "UniqueRequestToken": ANY,  # the bonus's id, checked below: it is known once the bonus exists
        },
    )


def test_a_local_workers_bonus_is_recorded_once_per_key_and_counted_in_spend():
    assignment = approved(reward_cents=100, platform_fee_percent=20.0)
    bonus = give(assignment)
    assert bonus.status == PayoutStatus.RECORDED and bonus.worker_id == assignment.worker_id
    assert give(assignment).pk == bonus.pk  # the same key: the same bonus
    give(assignment, idempotency_key="k2", amount_cents=50)
    spend = campaign_spend(campaign=assignment.hit.campaign)
    assert spend["bonuses_cents"] == 200 and spend["approved_cents"] == 100
    assert spend["fees_cents"] == 60 and spend["total_cents"] == 360


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"amount_cents": 0}, "between 1 and"),
        ({"amount_cents": -5}, "between 1 and"),
        ({"amount_cents": 10_001}, "between 1 and"),
        ({"reason": "  "}, "reason"),
        ({"idempotency_key": ""}, "idempotency key"),
    ],
)
def test_bad_bonuses_are_refused_with_a_reason(kwargs, message):
    assignment = approved()
    with pytest.raises(ApplicationError, match=message) as refused:
        give(assignment, **kwargs)
    assert refused.value.status == 400
    assert not Bonus.objects.exists()


def test_only_approved_work_of_the_campaign_gets_a_bonus():
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, status=CampaignStatus.LIVE)
    pending = submit(hit)
    with pytest.raises(ApplicationError, match="approved") as refused:
        give(pending)
    assert refused.value.status == 409
    other = approved()
    with pytest.raises(ApplicationError, match="not part of this campaign"):
        bonus_give(campaign=hit.campaign, assignment=other, amount_cents=10, reason="x", idempotency_key="k")


def test_the_database_refuses_a_non_positive_bonus_and_a_repeated_key():
    bonus = give(approved())
    fields = {
        "assignment_id": bonus.assignment_id,
        "worker_id": bonus.worker_id,
        "campaign_id": bonus.campaign_id,
        "reason": "again",
        "status": PayoutStatus.RECORDED,
    }
    with pytest.raises(IntegrityError), transaction.atomic():
        Bonus.objects.create(amount_cents=0, idempotency_key="other", **fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        Bonus.objects.create(amount_cents=10, idempotency_key="k1", **fields)


def test_an_mturk_bonus_is_sent_with_send_bonus_and_retried_after_a_fault(
    mturk_api, django_capture_on_commit_callbacks
):
    assignment = approved(external=True)
    mturk_api.add_client_error("send_bonus", service_error_code="ServiceFault", http_status_code=500)
    send_bonus_call(mturk_api)
    bonus = give(assignment, django_capture_on_commit_callbacks)
    # Both attempts carry the same token, so MTurk pays the bonus once even if the first one got through.
    assert [call["UniqueRequestToken"] for call in mturk_api.sent_bonuses] == [f"vericap-bonus-{bonus.pk}"] * 2
    assert bonus.status == PayoutStatus.SENT and bonus.sent_at is not None and bonus.attempts == 2
    # The same request again sends nothing (the Stubber would fail on an unqueued call).
    assert give(assignment, django_capture_on_commit_callbacks).pk == bonus.pk


def test_an_mturk_bonus_refused_by_mturk_fails_for_good_and_leaves_spend(mturk_api, django_capture_on_commit_callbacks):
    assignment = approved(external=True, reward_cents=100, platform_fee_percent=0.0)
    mturk_api.add_client_error("send_bonus", service_error_code="RequestError", http_status_code=400)
    bonus = give(assignment, django_capture_on_commit_callbacks)
    assert bonus.status == PayoutStatus.FAILED and bonus.attempts == 1 and "RequestError" in bonus.last_error
    assert campaign_spend(campaign=assignment.hit.campaign)["total_cents"] == 100
    assert MAX_ATTEMPTS > 1


def test_messages_go_to_workers_of_the_campaign_and_by_notify_workers_on_mturk(
    mturk_api, django_capture_on_commit_callbacks
):
    local = approved()
    campaign = local.hit.campaign
    message = worker_message_send(campaign=campaign, worker=local.worker, subject="Thanks", body="More soon.")
    assert message.status == PayoutStatus.RECORDED
    with pytest.raises(ApplicationError, match="did work on this campaign"):
        worker_message_send(campaign=campaign, worker=WorkerFactory(), subject="Hi", body="Hello")
    with pytest.raises(ApplicationError, match="subject and a text"):
        worker_message_send(campaign=campaign, worker=local.worker, subject="", body="x")

    external = approved(external=True)
    mturk_api.add_response(
        "notify_workers",
        {"NotifyWorkersFailureStatuses": []},
        {"Subject": "Thanks", "MessageText": "More soon.", "WorkerIds": ["AWORKER1"]},
    )
    with django_capture_on_commit_callbacks(execute=True):
        sent = worker_message_send(
            campaign=external.hit.campaign, worker=external.worker, subject="Thanks", body="More soon."
        )
    sent.refresh_from_db()
    assert sent.status == PayoutStatus.SENT and WorkerMessage.objects.count() == 2


def test_bonuses_and_messages_through_the_api_are_the_owners_only():
    assignment = approved()
    campaign = assignment.hit.campaign
    api = APIClient()
    api.force_authenticate(campaign.owner)
    body = {"assignment": assignment.pk, "amount_cents": 125, "reason": "Careful", "idempotency_key": "api-1"}
    first = api.post(f"/api/v1/campaigns/{campaign.pk}/bonuses/", body, format="json")
    assert first.status_code == 201 and first.json()["status"] == "recorded"
    again = api.post(f"/api/v1/campaigns/{campaign.pk}/bonuses/", body, format="json")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    bad = api.post(f"/api/v1/campaigns/{campaign.pk}/bonuses/", {**body, "amount_cents": 0}, format="json")
    assert bad.status_code == 400
    assert api.get(f"/api/v1/campaigns/{campaign.pk}/").json()["spend"]["bonuses_cents"] == 125
    sent = api.post(
        f"/api/v1/campaigns/{campaign.pk}/messages/",
        {"worker": assignment.worker.pseudonym, "subject": "Thanks", "body": "Well done."},
        format="json",
    )
    assert sent.status_code == 201

    api.force_authenticate(user_with_role(Role.REQUESTER))
    assert api.post(f"/api/v1/campaigns/{campaign.pk}/bonuses/", body, format="json").status_code == 404
    api.force_authenticate(user_with_role(Role.WORKER))
    assert api.post(f"/api/v1/campaigns/{campaign.pk}/bonuses/", body, format="json").status_code == 403
    assert Bonus.objects.count() == 1


def test_a_worker_sees_their_own_bonuses_and_messages_on_their_work_page(client):
    assignment = approved(reward_cents=140)
    give(assignment, amount_cents=1250, reason="Sharp eyes on the hard pairs")
    worker_message_send(
        campaign=assignment.hit.campaign, worker=assignment.worker, subject="Thank you", body="Keep it up."
    )
    other = approved()
    give(other, amount_cents=999, reason="Someone else's bonus")
    client.force_login(assignment.worker.user)
    page = client.get("/work/").content.decode()
    assert 'id="bonus-total">$12.50<' in page and "Sharp eyes on the hard pairs" in page
    assert "Thank you" in page and "Keep it up." in page
    assert "Someone else" not in page and "$9.99" not in page
    assert 'id="stat-earnings">$1.40<' in page


def test_a_requester_gives_a_bonus_and_writes_from_the_review_page_once_per_form(client):
    assignment = approved()
    campaign = assignment.hit.campaign
    client.force_login(campaign.owner)
    url = f"/review/assignments/{assignment.pk}/"
    page = client.get(url).content.decode()
    assert "Give the bonus" in page and 'name="idempotency_key"' in page
    form = {"amount": "$2.25", "reason": "Hard pairs done well", "idempotency_key": "form-1"}
    for _ in range(2):  # a double click sends the same form twice
        response = client.post(f"/review/assignments/{assignment.pk}/bonus", form)
        assert response.status_code == 302
    assert list(Bonus.objects.values_list("amount_cents", flat=True)) == [225]
    assert "$2.25: Hard pairs done well" in client.get(f"/review/assignments/{assignment.pk}/").content.decode()
    for amount in ("1.505", "abc", "NaN", "1e40", "-1", "0"):
        bad = client.post(
            f"/review/assignments/{assignment.pk}/bonus", {**form, "amount": amount, "idempotency_key": amount}
        )
        assert bad.status_code == 400, amount
    sent = client.post(f"/review/assignments/{assignment.pk}/message", {"subject": "Thanks", "body": "Well done."})
    assert sent.status_code == 302 and WorkerMessage.objects.filter(worker=assignment.worker).count() == 1

    client.force_login(user_with_role(Role.REQUESTER))
    assert (
        client.post(f"/review/assignments/{assignment.pk}/bonus", {**form, "idempotency_key": "x"}).status_code == 404
    )
    client.force_login(user_with_role(Role.WORKER))
    assert client.post(f"/review/assignments/{assignment.pk}/message", {"subject": "a", "body": "b"}).status_code == 403
    assert Bonus.objects.count() == 1 and WorkerMessage.objects.count() == 1
