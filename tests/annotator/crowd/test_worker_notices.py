"""What a worker is told: the reason for a rejection and what to do, why they are not offered work, and
what a HIT pays per hour before they start; and the requester's progress counts submitted HITs."""

import pytest
from django.test import Client
from django.urls import reverse

from annotator.campaigns.selectors.crowd_work import campaign_progress
from annotator.crowd.services.workers import worker_for_user
from annotator.models import Answer, AssignmentStatus, Role, WorkerStanding
from annotator.quality.services.decisions import assignment_approve, assignment_reject
from annotator.quality.services.trust import worker_platform_block
from tests.annotator.quality_support import submit
from tests.annotator.tenancy_support import B_REASON, two_tenants
from tests.factories import UserFactory, live_campaign_with_hits, user_with_role

pytestmark = pytest.mark.django_db

HOSTILE_REASON = '<script>alert("x")</script> gold items answered at random'


def logged_in_worker():
    user = user_with_role(Role.WORKER)
    client = Client()
    client.force_login(user)
    return client, worker_for_user(user=user)


def test_a_rejected_worker_sees_the_escaped_reason_and_what_to_do_on_the_hit_and_in_their_history():
    campaign = live_campaign_with_hits(hits=2, qualification_items=0)
    client, worker = logged_in_worker()
    rejected = submit(campaign.hits.get(index=0), worker=worker)
    assignment_reject(assignment=rejected, actor=campaign.owner, reason=HOSTILE_REASON)
    approved = submit(campaign.hits.get(index=1), worker=worker)
    assignment_approve(assignment=approved, actor=campaign.owner)

    hit_page = client.get(reverse("work_hit", args=[rejected.pk])).content.decode()
    notice = hit_page.split('id="rejection"')[1].split("</div>")[0]
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; gold items answered at random" in notice
    assert "<script>alert" not in hit_page
    assert "overturn" in notice and "Contact this requester" in notice
    assert 'id="rejection"' not in client.get(reverse("work_hit", args=[approved.pk])).content.decode()

    home = client.get(reverse("work_home")).content.decode()
    history = home.split("Your recent HITs")[1]
    assert history.count("rejection-reason") == 1 and "&lt;script&gt;alert" in history
    assert "<script>alert" not in home and 'id="rejection-advice"' in history


def test_a_rejection_overturned_and_rejected_again_shows_the_latest_reason():
    campaign = live_campaign_with_hits(hits=1, qualification_items=0)
    client, worker = logged_in_worker()
    assignment = submit(campaign.hits.get(), worker=worker)
    assignment_reject(assignment=assignment, actor=campaign.owner, reason="first reason")
    assignment_approve(assignment=assignment, actor=campaign.owner, reason="on appeal")
    assert "Reason:" not in client.get(reverse("work_home")).content.decode()
    assignment_reject(assignment=assignment, actor=campaign.owner, reason="second reason")
    page = client.get(reverse("work_hit", args=[assignment.pk])).content.decode()
    assert "second reason" in page and "first reason" not in page


def test_a_platform_blocked_worker_is_told_why_and_offered_nothing():
    campaign = live_campaign_with_hits(hits=2, qualification_items=0)
    client, worker = logged_in_worker()
    staff = UserFactory(is_staff=True)
    worker_platform_block(worker=worker, actor=staff, reason="several <b>accounts</b> for one person")

    home = client.get(reverse("work_home")).content.decode()
    assert "several &lt;b&gt;accounts&lt;/b&gt; for one person" in home
    offered = home.split("Campaigns you can work on")[1].split("</table>")[0]
    assert "Start working" not in offered and reverse("work_campaign", args=[campaign.pk]) not in offered
    assert "Not offered to you" in offered

    page = client.get(reverse("work_campaign", args=[campaign.pk])).content.decode()
    notice = page.split('id="block-notice"')[1].split("</div>")[0]
    assert "several &lt;b&gt;accounts&lt;/b&gt; for one person" in notice
    assert 'id="start-working"' not in page and 'id="take-test"' not in page
    assert client.post(reverse("work_claim", args=[campaign.pk])).status_code == 302
    assert not worker.assignments.filter(status=AssignmentStatus.RESERVED).exists()


def test_a_blocked_worker_is_not_offered_the_qualification_test_either():
    campaign = live_campaign_with_hits(hits=1, qualification_items=2)
    client, worker = logged_in_worker()
    worker_platform_block(worker=worker, actor=UserFactory(is_staff=True), reason="shared account")
    page = client.get(reverse("work_campaign", args=[campaign.pk])).content.decode()
    assert 'id="take-test"' not in page and "shared account" in page
    response = client.get(reverse("work_qualification", args=[campaign.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("work_campaign", args=[campaign.pk])
    assert not worker.qualification_attempts.exists()


def test_a_worker_blocked_by_one_requester_learns_only_that_this_requester_offers_no_work():
    tenants = two_tenants()
    client = Client()
    client.force_login(tenants.worker.user)
    page = client.get(reverse("work_campaign", args=[tenants.campaign_b.pk])).content.decode()
    notice = page.split('id="block-notice"')[1].split("</div>")[0]
    assert "This requester does not offer you work" in notice and "Other requesters" in notice
    assert B_REASON not in page and tenants.b.username not in page
    assert 'id="start-working"' not in page
    open_page = client.get(reverse("work_campaign", args=[tenants.campaign_a.pk])).content.decode()
    assert 'id="block-notice"' not in open_page and 'id="start-working"' in open_page


def test_a_soft_blocked_worker_is_told_it_is_about_their_check_items_without_the_requesters_numbers():
    tenants = two_tenants()
    WorkerStanding.objects.filter(worker=tenants.worker, requester=tenants.a).update(
        soft_blocked=True, soft_block_reason="gold answers 0/9: posterior 0.99 (at least 0.95)"
    )
    client = Client()
    client.force_login(tenants.worker.user)
    page = client.get(reverse("work_campaign", args=[tenants.campaign_a.pk])).content.decode()
    notice = page.split('id="block-notice"')[1].split("</div>")[0]
    assert "while your recent work is reviewed" in notice and "check items" in notice
    assert "0.95" not in page and 'id="start-working"' not in page


def test_pay_estimate_starts_from_the_default_then_follows_the_median_of_approved_work(settings):
    settings.CAMPAIGN_SECONDS_PER_ITEM = 20.0
    campaign = live_campaign_with_hits(hits=3, candidates=4, qualification_items=0, reward_cents=60)
    client, _worker = logged_in_worker()
    items = campaign.hit_size
    assert items == 6  # 4 candidates and 2 gold

    page = client.get(reverse("work_campaign", args=[campaign.pk])).content.decode()
    estimate = page.split('id="pay-estimate"')[1].split("</p>")[0]
    # 6 items x 20 s = 2 min for 60 cents: $18.00 an hour
    assert "about <strong>2 min</strong>" in estimate and "$18.00 an hour" in estimate and "first guess" in estimate

    # Approved work at 10 s an item (and a slow rejected one that must not count): 1 min, $36.00 an hour.
    fast = submit(campaign.hits.get(index=0), seconds=10.0)
    assignment_approve(assignment=fast, actor=campaign.owner)
    slow = submit(campaign.hits.get(index=1), seconds=300.0)
    assignment_reject(assignment=slow, actor=campaign.owner, reason="too slow to be real")
    assert Answer.objects.filter(assignment=fast).count() == items
    page = client.get(reverse("work_campaign", args=[campaign.pk])).content.decode()
    estimate = page.split('id="pay-estimate"')[1].split("</p>")[0]
    assert "about <strong>1 min</strong>" in estimate and "$36.00 an hour" in estimate
    assert "median time of approved work" in estimate

    home = client.get(reverse("work_home")).content.decode()
    row = home.split(campaign.name)[1].split("</tr>")[0]
    assert "1 min" in row and "$36.00" in row


def test_progress_counts_submitted_hits_before_any_decision_on_the_page_and_in_the_api():
    campaign = live_campaign_with_hits(hits=7, qualification_items=0)
    first = submit(campaign.hits.get(index=0))
    submit(campaign.hits.get(index=1))
    progress = campaign_progress(campaign=campaign)
    assert (progress["hits_submitted"], progress["hits_approved"], progress["hits_total"]) == (2, 0, 7)

    client = Client()
    client.force_login(campaign.owner)
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "2 submitted (awaiting review), 0 approved of 7 HITs" in page
    api = client.get(f"/api/v1/campaigns/{campaign.pk}/statistics/").json()["progress"]
    assert (api["hits_submitted"], api["hits_approved"], api["hits_total"]) == (2, 0, 7)

    assignment_approve(assignment=first, actor=campaign.owner)
    progress = campaign_progress(campaign=campaign)
    assert (progress["hits_submitted"], progress["hits_approved"]) == (1, 1)


def test_a_hit_with_redundancy_counts_as_submitted_only_when_every_slot_is_handed_in():
    campaign = live_campaign_with_hits(hits=1, redundancy=2, qualification_items=0)
    hit = campaign.hits.get()
    submit(hit)
    assert campaign_progress(campaign=campaign)["hits_submitted"] == 0
    submit(hit)
    assert campaign_progress(campaign=campaign)["hits_submitted"] == 1
