"""The MTurk client: publish as ExternalQuestion, approve, reject (botocore Stubber, no AWS)."""

import boto3
import pytest
from botocore.stub import ANY, Stubber

from annotator.core.errors import ApplicationError
from annotator.crowd.mturk import (
    ASSIGNMENT_ACCEPTED,
    campaign_publish_to_mturk,
    external_question_xml,
    mturk_approve,
    mturk_arrival_verify,
    mturk_reject,
)
from annotator.models import Hit
from tests.factories import AssignmentFactory, live_campaign_with_hits

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    mturk = boto3.client(
        "mturk",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        endpoint_url="https://mturk-requester-sandbox.us-east-1.amazonaws.com",
    )
    with Stubber(mturk) as stubber:
        mturk.stubber = stubber
        yield mturk
        stubber.assert_no_pending_responses()


def test_publish_creates_one_external_question_hit_per_open_hit_once(client):
    campaign = live_campaign_with_hits(hits=2, candidates=1, redundancy=3, reward_cents=140, lease_minutes=45)
    hits = list(campaign.hits.order_by("index"))
    for n, hit in enumerate(hits):
        client.stubber.add_response(
            "create_hit",
            {"HIT": {"HITId": f"3HIT{n}"}},
            {
                "Title": ANY,
                "Description": ANY,
                "Keywords": ANY,
                "Reward": "1.40",
                "MaxAssignments": 3,
                "LifetimeInSeconds": 7 * 24 * 3600,
                "AssignmentDurationInSeconds": 45 * 60,
                "AutoApprovalDelayInSeconds": 72 * 3600,
                "Question": external_question_xml(base_url="https://vericap.example.org"),
                "RequesterAnnotation": ANY,
                "UniqueRequestToken": f"vericap-{campaign.pk}-{hit.pk}",
            },
        )
    created = campaign_publish_to_mturk(campaign=campaign, client=client, base_url="https://vericap.example.org")
    assert created == ["3HIT0", "3HIT1"]
    assert list(Hit.objects.filter(campaign=campaign).order_by("index").values_list("external_hit_id", flat=True)) == [
        "3HIT0",
        "3HIT1",
    ]
    # a second run publishes nothing (no stubbed response left: a call would fail)
    assert campaign_publish_to_mturk(campaign=campaign, client=client, base_url="https://vericap.example.org") == []


def test_external_question_points_at_the_arrival_page_over_https():
    xml = external_question_xml(base_url="https://vericap.example.org/")
    assert "<ExternalURL>https://vericap.example.org/mturk/</ExternalURL>" in xml
    with pytest.raises(ApplicationError, match="https"):
        external_question_xml(base_url="http://vericap.example.org")


def test_approve_and_reject_call_mturk_for_external_assignments_only(client):
    external = AssignmentFactory(external_assignment_id="3ASSIGN")
    local = AssignmentFactory()
    client.stubber.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGN", "RequesterFeedback": "Thanks"})
    client.stubber.add_response(
        "reject_assignment", {}, {"AssignmentId": "3ASSIGN", "RequesterFeedback": "Gold answers wrong"}
    )
    mturk_approve(assignment=external, client=client, feedback="Thanks")
    mturk_reject(assignment=external, client=client, feedback="Gold answers wrong")
    mturk_approve(assignment=local, client=client)  # no call: a local worker
    with pytest.raises(ApplicationError, match="reason"):
        mturk_reject(assignment=external, client=client, feedback=" ")


def test_arrival_verify_reads_get_assignment_and_refuses_what_mturk_contradicts(client):
    """Submitted/approved: the worker and HIT must match; accepted (MTurk gives no details): "Accepted"."""
    hit = live_campaign_with_hits(hits=1).hits.get()
    Hit.objects.filter(pk=hit.pk).update(external_hit_id="3HIT")
    hit.refresh_from_db()

    def assignment(assignment_id, status):
        return {
            "Assignment": {"AssignmentId": assignment_id, "WorkerId": "AW", "HITId": "3HIT", "AssignmentStatus": status}
        }

    client.stubber.add_response("get_assignment", assignment("3A", "Approved"), {"AssignmentId": "3A"})
    client.stubber.add_client_error(
        "get_assignment",
        service_error_code="RequestError",
        expected_params={"AssignmentId": "3B"},
        service_message="This operation can be called with a status of: Reviewable,Approved,Rejected",
    )
    client.stubber.add_response("get_assignment", assignment("3C", "Submitted"), {"AssignmentId": "3C"})
    assert mturk_arrival_verify(hit=hit, assignment_id="3A", worker_id="AW", client=client) == "Approved"
    assert mturk_arrival_verify(hit=hit, assignment_id="3B", worker_id="AW", client=client) == ASSIGNMENT_ACCEPTED
    with pytest.raises(ApplicationError) as refused:
        mturk_arrival_verify(hit=hit, assignment_id="3C", worker_id="ANOTHER", client=client)
    assert refused.value.status == 403
    with pytest.raises(ApplicationError) as malformed:  # refused without asking MTurk (nothing queued for it)
        mturk_arrival_verify(hit=hit, assignment_id="3c; drop", worker_id="AW", client=client)
    assert malformed.value.status == 403
