"""Review and quality pages (annotator/quality/views/review.py): who may see them and what they do."""

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from annotator.models import AssignmentStatus, CampaignStatus, Role, WorkerStanding
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def flagged():
    """A live campaign whose owner has one flagged assignment (a gold item answered wrong) to review."""
    owner = user_with_role(Role.REQUESTER)
    hit = hit_with_gold(owner=owner, redundancy=1, status=CampaignStatus.LIVE)
    assignment = assignment_score(assignment_id=submit(hit, gold_positive="no", candidate="mostly_no").pk)
    return owner, hit.campaign, assignment


def _pages(campaign, assignment):
    return [
        reverse("review-queue", args=[campaign.pk]),
        reverse("review-quality", args=[campaign.pk]),
        reverse("review-cleanup", args=[campaign.pk]),
        reverse("review-assignment", args=[assignment.pk]),
    ]


def test_anonymous_goes_to_login_and_worker_gets_403(client, flagged):
    _, campaign, assignment = flagged
    for url in _pages(campaign, assignment):
        assert client.get(url).status_code == 302
    client.force_login(user_with_role(Role.WORKER))
    for url in _pages(campaign, assignment):
        assert client.get(url).status_code == 403


def test_another_requester_sees_404_and_cannot_decide(client, flagged):
    _, campaign, assignment = flagged
    client.force_login(user_with_role(Role.REQUESTER))
    for url in _pages(campaign, assignment):
        assert client.get(url).status_code == 404
    response = client.post(reverse("review-decide", args=[assignment.pk]), {"decision": "approve"})
    assert response.status_code == 404
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED


def test_owner_sees_queue_and_answers_beside_gold(client, flagged):
    owner, campaign, assignment = flagged
    client.force_login(owner)
    queue = client.get(reverse("review-queue", args=[campaign.pk]))
    assert queue.status_code == 200 and f"#{assignment.pk}" in queue.content.decode()
    page = client.get(reverse("review-assignment", args=[assignment.pk])).content.decode()
    assert "100% YES or Partially YES" in page  # what the gold positive expected
    assert "wrong" in page and "100% NO" in page  # the worker's answer, marked wrong


def test_reject_needs_reason_then_records_who(client, flagged):
    owner, campaign, assignment = flagged
    client.force_login(owner)
    url = reverse("review-decide", args=[assignment.pk])
    response = client.post(url, {"decision": "reject", "reason": ""})
    assert response.status_code == 400 and "reason" in response.content.decode()
    response = client.post(url, {"decision": "reject", "reason": "gold positive answered 100% NO"})
    assert response.status_code == 302
    event = assignment.events.get(to_status=AssignmentStatus.REJECTED)
    assert event.actor == owner and event.reason == "gold positive answered 100% NO"


def test_bulk_approve_with_checkboxes(client, flagged):
    owner, campaign, assignment = flagged
    hit = assignment.hit
    hit.assignments_required = 2
    hit.save()
    other = assignment_score(assignment_id=submit(hit, gold_negative="yes", candidate="no").pk)
    client.force_login(owner)
    response = client.post(
        reverse("review-bulk", args=[campaign.pk]), {"assignment": [assignment.pk, other.pk], "decision": "approve"}
    )
    assert response.status_code == 302
    assert set(hit.assignments.values_list("status", flat=True)) == {AssignmentStatus.APPROVED}


def test_bulk_refuses_assignments_of_another_campaign(client, flagged):
    owner, campaign, _ = flagged
    stranger = assignment_score(assignment_id=submit(hit_with_gold(), gold_positive="no").pk)
    client.force_login(owner)
    response = client.post(
        reverse("review-bulk", args=[campaign.pk]), {"assignment": [stranger.pk], "decision": "approve"}
    )
    assert response.status_code == 404
    stranger.refresh_from_db()
    assert stranger.status == AssignmentStatus.SUBMITTED


def test_quality_page_shows_table_b1_buckets(client, flagged):
    owner, campaign, assignment = flagged
    client.force_login(owner)
    page = client.get(reverse("review-quality", args=[campaign.pk])).content.decode()
    assert "ECCV Table B.1" in page and assignment.worker.pseudonym in page


def test_block_and_unblock_a_worker_of_the_campaign(client, flagged):
    owner, campaign, assignment = flagged
    worker = assignment.worker
    client.force_login(owner)
    url = reverse("review-worker", args=[campaign.pk, worker.pk, "block"])
    assert client.post(url, {"reason": "copy-paste answers"}).status_code == 302
    standing = WorkerStanding.objects.get(worker=worker, requester=campaign.owner)
    assert standing.blocked and worker.trust_events.get().actor == owner
    assert (
        client.post(
            reverse("review-worker", args=[campaign.pk, worker.pk, "unblock"]), {"reason": "appeal"}
        ).status_code
        == 302
    )
    standing.refresh_from_db()
    assert not standing.blocked and worker.trust_events.count() == 2


def test_cleanup_page_sends_external_label_sets_to_the_label_set_pages(client, flagged):
    """Released labels are label sets of their own: the campaign offers no import that would overwrite its labels."""
    owner, campaign, _ = flagged
    client.force_login(owner)
    html = client.get(reverse("review-cleanup", args=[campaign.pk])).content.decode()
    assert reverse("labelset-list") in html
    assert "Import as labels" not in html
    assert client.post(f"/review/campaigns/{campaign.pk}/cleanup/import").status_code == 404


def test_quality_panel_counts_and_links(flagged):
    """The panel the campaign page includes at its quality spot: counts and links for the owner."""
    from django.template import Context, Template

    _, campaign, _ = flagged
    html = Template("{% load quality_tags %}{% quality_panel campaign %}").render(Context({"campaign": campaign}))
    assert "<strong>1</strong> assignment to review" in html
    assert reverse("review-queue", args=[campaign.pk]) in html and reverse("review-quality", args=[campaign.pk]) in html
    detail = (Path(settings.BASE_DIR) / "templates" / "campaigns" / "detail.html").read_text()
    assert "{% quality_panel campaign %}" in detail


def test_soft_blocked_worker_gets_an_unblock_button(client, flagged):
    owner, campaign, assignment = flagged
    worker = assignment.worker
    WorkerStanding.objects.update_or_create(worker=worker, requester=campaign.owner, defaults={"soft_blocked": True})
    client.force_login(owner)
    page = client.get(reverse("review-quality", args=[campaign.pk])).content.decode()
    assert reverse("review-worker", args=[campaign.pk, worker.pk, "unblock"]) in page
    assert reverse("review-worker", args=[campaign.pk, worker.pk, "block"]) not in page


def test_quality_page_lists_disputed_gold(client, flagged):
    owner, campaign, assignment = flagged
    hit = assignment.hit
    hit.assignments_required = 9
    hit.save()
    for _ in range(5):
        assignment_score(assignment_id=submit(hit, candidate="no", gold_positive="mostly_no").pk)
    client.force_login(owner)
    page = client.get(reverse("review-quality", args=[campaign.pk])).content.decode()
    assert "Gold items the crowd contradicts" in page and "6/6" in page
    detail = client.get(reverse("review-assignment", args=[assignment.pk])).content.decode()
    assert "disputed: 6 of 6" in detail


def test_the_review_page_numbers_a_workers_items_1_to_18_as_the_worker_saw_them(client):
    """Item k of the review page is item k of the worker's HIT page (once shown as "items 2-19")."""
    import re

    from annotator.crowd.selectors.hits import hit_worker_items
    from tests.factories import live_campaign_with_hits

    campaign = live_campaign_with_hits(hits=1, candidates=16, qualification_items=0)
    hit = campaign.hits.get()
    assignment = submit(hit)
    seen = [(entry["position"], entry["caption"]) for entry in hit_worker_items(hit=hit)]
    client.force_login(campaign.owner)
    page = client.get(reverse("review-assignment", args=[assignment.pk])).content.decode()
    rows = re.findall(r'<td>(\d+)</td>\s*<td class="review-pair">.*?class="review-caption">([^<]*)<', page, re.S)
    assert [(int(number), caption) for number, caption in rows] == seen
    assert [number for number, _ in seen] == list(range(1, 19))


def test_the_quality_page_sets_the_whole_policy_through_the_one_policy_service(client, flagged):
    owner, campaign, _ = flagged
    client.force_login(owner)
    page = client.get(reverse("review-quality", args=[campaign.pk])).content.decode()
    assert 'name="settle_probability"' in page and 'name="adaptive_redundancy"' in page
    assert 'name="gold_light_share"' in page
    form = {
        "tolerated_gold_misses": "1",
        "label_model": "majority",
        "switches": "1",
        "adaptive_redundancy": "on",
        "settle_probability": "0.9",
        "settle_min_answers": "3",
        "max_answers_per_pair": "4",
        "gold_light_share": "0.25",
    }
    response = client.post(reverse("review-policy", args=[campaign.pk]), form)
    assert response.status_code == 302
    campaign.refresh_from_db()
    assert (campaign.tolerated_gold_misses, campaign.label_model, campaign.settle_probability) == (1, "majority", 0.9)
    assert (campaign.settle_min_answers, campaign.max_answers_per_pair, campaign.gold_light_share) == (3, 4, 0.25)
    assert campaign.adaptive_redundancy and not campaign.machine_prior  # an unticked box is off
    # The service's rules between fields hold on the page as in the API: nothing is saved.
    bad = client.post(reverse("review-policy", args=[campaign.pk]), {"settle_min_answers": "5"})
    assert bad.status_code == 400 and "max_answers_per_pair" in bad.content.decode()
    campaign.refresh_from_db()
    assert campaign.settle_min_answers == 3


def test_queue_lists_clean_work_waiting_for_auto_approval_apart_from_the_flagged(client, flagged):
    """A scored, unflagged submission is not in the flagged table but under "Waiting for auto-approval",
    linked to its page, so the requester can decide it before it approves itself."""
    owner, campaign, flagged_assignment = flagged
    hit = hit_with_gold(campaign=campaign)
    clean = assignment_score(assignment_id=submit(hit, seconds=12.0).pk)
    assert clean.status == AssignmentStatus.SUBMITTED and clean.flags == []
    client.force_login(owner)
    html = client.get(reverse("review-queue", args=[campaign.pk])).content.decode()
    flagged_table, awaiting = html.split('id="awaiting-title"')
    assert reverse("review-assignment", args=[flagged_assignment.pk]) in flagged_table
    assert reverse("review-assignment", args=[clean.pk]) not in flagged_table
    assert reverse("review-assignment", args=[clean.pk]) in awaiting
    assert "1 awaiting auto-approval" in html
