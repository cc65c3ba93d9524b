"""The workers API answers for the caller's own record and decisions; platform blocks are staff-only."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator.core.errors import ApplicationError
from annotator.crowd.services.assignments import assignment_claim
from annotator.models import AuditAction, AuditEvent, Role, WorkerStanding
from tests.annotator.tenancy_support import B_REASON, Tenants, two_tenants
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(db) -> Tenants:
    return two_tenants()


def api(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_a_requester_sees_only_their_own_record_and_decisions(tenants):
    url = f"/api/v1/workers/{tenants.worker.pk}/"
    mine = api(tenants.a).get(url).json()
    assert (mine["gold_correct"], mine["gold_total"]) == (2, 2)
    assert mine["blocked"] is False and mine["blocked_reason"] == "" and mine["platform_blocked"] is False
    listed = api(tenants.a).get("/api/v1/workers/").json()["results"]
    assert [row["id"] for row in listed] == [tenants.worker.pk] and B_REASON not in str(listed)
    theirs = api(tenants.b).get(url).json()
    assert (theirs["gold_correct"], theirs["gold_total"]) == (1, 2)
    assert theirs["blocked"] is True and theirs["blocked_reason"] == B_REASON


def test_a_requesters_unblock_does_not_lift_anothers_block(tenants):
    response = api(tenants.a).post(f"/api/v1/workers/{tenants.worker.pk}/unblock/", {"reason": "x"}, format="json")
    assert response.status_code == 200
    assert WorkerStanding.objects.get(worker=tenants.worker, requester=tenants.b).blocked
    with pytest.raises(ApplicationError):
        assignment_claim(campaign=tenants.campaign_b, worker=tenants.worker)


def test_a_requester_who_never_had_the_workers_work_gets_404(tenants):
    stranger = user_with_role(Role.REQUESTER, username="req-c")
    assert api(stranger).get(f"/api/v1/workers/{tenants.worker.pk}/").status_code == 404
    blocked = api(stranger).post(f"/api/v1/workers/{tenants.worker.pk}/block/", {"reason": "x"}, format="json")
    assert blocked.status_code == 404


def test_only_staff_block_on_the_whole_platform(tenants):
    url = f"/api/v1/workers/{tenants.worker.pk}/platform-block/"
    refused = api(tenants.a).post(url, {"reason": "fraud"}, format="json")
    assert refused.status_code == 403 and "staff" in refused.json()["error"]
    tenants.worker.refresh_from_db()
    assert not tenants.worker.blocked
    staff = user_with_role(Role.REQUESTER, username="staff", is_staff=True)
    no_reason = api(staff).post(url, {}, format="json")
    assert no_reason.status_code == 400
    done = api(staff).post(url, {"reason": "fraud ring"}, format="json")
    assert done.status_code == 200 and done.json()["platform_blocked"] is True
    assert AuditEvent.objects.filter(
        action=AuditAction.WORKER_PLATFORM_BLOCK, actor=staff, worker=tenants.worker
    ).exists()
    for campaign in (tenants.campaign_a, tenants.campaign_b):
        with pytest.raises(ApplicationError):
            assignment_claim(campaign=campaign, worker=tenants.worker)
    # Requesters learn that staff blocked the worker, not why.
    seen = api(tenants.a).get(f"/api/v1/workers/{tenants.worker.pk}/").json()
    assert seen["platform_blocked"] is True and "fraud ring" not in str(seen)
