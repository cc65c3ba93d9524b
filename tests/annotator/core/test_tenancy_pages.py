"""Requester pages show a requester their own record of a worker and their own decisions, never another
requester's block, block reason or gold scores; a worker's pages follow the campaign owner's standing."""

import pytest
from django.urls import reverse

from annotator.models import WorkerStanding
from tests.annotator.tenancy_support import B_REASON, Tenants, two_tenants

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(db) -> Tenants:
    return two_tenants()


def test_requester_pages_show_nothing_of_another_requesters_decisions(client, tenants):
    client.force_login(tenants.a)
    quality = client.get(reverse("review-quality", args=[tenants.campaign_a.pk])).content.decode()
    assert tenants.worker.pseudonym in quality
    assert B_REASON not in quality and "blocked" not in quality.split('id="per-worker"')[1].split("</table>")[0]
    assert "2/2" in quality and "1/2" not in quality  # A's gold record, not B's
    review = client.get(reverse("review-assignment", args=[tenants.assignment_a.pk])).content.decode()
    assert "gold 2/2" in review and "(blocked)" not in review and B_REASON not in review
    audit = client.get(reverse("audit")).content.decode()
    assert B_REASON not in audit


def test_the_blocking_requester_sees_their_own_decision(client, tenants):
    client.force_login(tenants.b)
    quality = client.get(reverse("review-quality", args=[tenants.campaign_b.pk])).content.decode()
    per_worker = quality.split('id="per-worker"')[1].split("</table>")[0]
    assert "blocked" in per_worker and B_REASON in per_worker and "1/2" in per_worker
    assert reverse("review-worker", args=[tenants.campaign_b.pk, tenants.worker.pk, "unblock"]) in per_worker
    assert B_REASON in client.get(reverse("audit")).content.decode()


def test_a_requester_cannot_reach_anothers_campaign_or_its_worker_decisions(client, tenants):
    client.force_login(tenants.a)
    assert client.get(reverse("review-quality", args=[tenants.campaign_b.pk])).status_code == 404
    assert client.get(reverse("review-assignment", args=[tenants.assignment_b.pk])).status_code == 404
    url = reverse("review-worker", args=[tenants.campaign_b.pk, tenants.worker.pk, "unblock"])
    assert client.post(url, {"reason": "undo B's block"}).status_code == 404
    assert WorkerStanding.objects.get(worker=tenants.worker, requester=tenants.b).blocked


def test_blocking_on_a_campaign_page_is_the_owners_decision_only(client, tenants):
    client.force_login(tenants.a)
    url = reverse("review-worker", args=[tenants.campaign_a.pk, tenants.worker.pk, "block"])
    assert client.post(url, {"reason": "A's reason"}).status_code == 302
    assert WorkerStanding.objects.get(worker=tenants.worker, requester=tenants.a).blocked
    unblock = reverse("review-worker", args=[tenants.campaign_a.pk, tenants.worker.pk, "unblock"])
    assert client.post(unblock, {"reason": "appeal"}).status_code == 302
    assert not WorkerStanding.objects.get(worker=tenants.worker, requester=tenants.a).blocked
    assert WorkerStanding.objects.get(worker=tenants.worker, requester=tenants.b).blocked  # B's stands


def test_the_worker_may_start_on_a_campaign_but_not_on_the_blocking_requesters(client, tenants):
    client.force_login(tenants.worker.user)
    open_page = client.get(reverse("work_campaign", args=[tenants.campaign_a.pk])).content.decode()
    closed_page = client.get(reverse("work_campaign", args=[tenants.campaign_b.pk])).content.decode()
    assert 'id="start-working"' in open_page and "may not take new HITs" not in open_page
    assert 'id="start-working"' not in closed_page and "may not take new HITs" in closed_page
    assert B_REASON not in closed_page
    home = client.get(reverse("work_home")).content.decode()
    offered = home.split("Campaigns you can work on")[1].split("</table>")[0]
    assert tenants.campaign_a.name in offered and tenants.campaign_b.name not in offered
    assert client.post(reverse("work_claim", args=[tenants.campaign_a.pk])).status_code == 200  # the HIT page


def test_a_requester_opts_in_to_the_shared_reputation_and_out_again(client, tenants):
    from annotator.models import Profile

    client.force_login(tenants.a)
    page = client.get(reverse("account-reputation")).content.decode()
    assert "not sharing" in page  # off by default
    assert client.post(reverse("account-reputation-set"), {"share": "1"}).status_code == 302
    assert Profile.objects.get(user=tenants.a).share_gold_record
    assert client.post(reverse("account-reputation-set"), {"share": "0"}).status_code == 302
    assert not Profile.objects.get(user=tenants.a).share_gold_record
    client.force_login(tenants.worker.user)
    assert client.post(reverse("account-reputation-set"), {"share": "1"}).status_code == 403
