"""Requesters are tenants: blocks, soft blocks and gold records hold per (requester, worker); platform-wide
blocks are for staff only and audited (annotator.quality.services.trust, WorkerStanding)."""

import pytest
from django.db import IntegrityError

from annotator.core.errors import ApplicationError
from annotator.crowd.services.assignments import assignment_claim
from annotator.models import AuditAction, AuditEvent, Profile, TrustAction, WorkerStanding
from annotator.quality.selectors.gold import gold_pairs_disputed
from annotator.quality.services.trust import (
    worker_block,
    worker_platform_block,
    worker_platform_unblock,
    worker_shared_gold,
    worker_trust,
    worker_trust_refresh,
    worker_unblock,
)
from tests.annotator.tenancy_support import B_REASON, Tenants, two_tenants
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(db) -> Tenants:
    return two_tenants()


def test_one_requesters_block_does_not_stop_the_worker_on_another_requesters_campaign(tenants):
    lease = assignment_claim(campaign=tenants.campaign_a, worker=tenants.worker)
    assert lease.hit.campaign_id == tenants.campaign_a.pk
    with pytest.raises(ApplicationError) as refused:
        assignment_claim(campaign=tenants.campaign_b, worker=tenants.worker)
    assert refused.value.status == 403
    assert B_REASON not in str(refused.value)  # the worker is not told the requester's private reason


def test_a_soft_block_holds_on_the_owners_campaigns_only(tenants):
    """B's gold record says "guessing": B's standing is soft-blocked; A's campaigns stay open."""
    worker_unblock(worker=tenants.worker, requester=tenants.b, actor=tenants.b, reason="second chance")
    WorkerStanding.objects.filter(worker=tenants.worker, requester=tenants.b).update(gold_correct=3, gold_total=10)
    assert worker_trust_refresh(worker_id=tenants.worker.pk, requester_id=tenants.b.pk).soft_blocked
    assert not WorkerStanding.objects.get(worker=tenants.worker, requester=tenants.a).soft_blocked
    assignment_claim(campaign=tenants.campaign_a, worker=tenants.worker)
    with pytest.raises(ApplicationError, match="paused"):
        assignment_claim(campaign=tenants.campaign_b, worker=tenants.worker)


def test_trust_figures_count_only_the_requesters_own_campaigns(tenants):
    mine = worker_trust(worker=tenants.worker, requester_id=tenants.a.pk)
    theirs = worker_trust(worker=tenants.worker, requester_id=tenants.b.pk)
    assert (mine.gold_correct, mine.gold_total, mine.hits_done) == (2, 2, 1)
    assert (theirs.gold_correct, theirs.gold_total, theirs.hits_done) == (1, 2, 1)


def test_gold_feeds_a_shared_reputation_only_between_requesters_who_opted_in(tenants):
    Profile.objects.filter(user=tenants.a).update(share_gold_record=True)
    # B has not opted in: nothing of B's flows to A, and A's record is A's own.
    assert worker_shared_gold(worker=tenants.worker, exclude_requester_id=tenants.a.pk) == (0, 0)
    assert worker_trust(worker=tenants.worker, requester_id=tenants.a.pk).gold_total == 2
    assert worker_trust(worker=tenants.worker, requester_id=tenants.b.pk).gold_total == 2  # B does not read it
    Profile.objects.filter(user=tenants.b).update(share_gold_record=True)
    pooled = worker_trust(worker=tenants.worker, requester_id=tenants.a.pk)
    assert (pooled.gold_correct, pooled.gold_total) == (3, 4)  # totals only: no campaign, no requester
    assert worker_shared_gold(worker=tenants.worker) == (3, 4)


def test_staff_platform_block_stops_every_claim_and_leaves_an_audit_event(tenants):
    staff = user_with_role("requester", username="staff", is_staff=True)
    worker_platform_block(worker=tenants.worker, actor=staff, reason="fraud ring")
    for campaign in (tenants.campaign_a, tenants.campaign_b):
        with pytest.raises(ApplicationError, match="may not take new HITs") as refused:
            assignment_claim(campaign=campaign, worker=tenants.worker)
        assert refused.value.status == 403
    event = AuditEvent.objects.get(action=AuditAction.WORKER_PLATFORM_BLOCK)
    assert (event.actor, event.worker, event.detail["reason"]) == (staff, tenants.worker, "fraud ring")
    assert tenants.worker.trust_events.filter(action=TrustAction.PLATFORM_BLOCK, requester=None).exists()
    worker_platform_unblock(worker=tenants.worker, actor=staff, reason="cleared")
    assignment_claim(campaign=tenants.campaign_a, worker=tenants.worker)
    assert AuditEvent.objects.filter(action=AuditAction.WORKER_PLATFORM_UNBLOCK, actor=staff).exists()


def test_a_requester_cannot_block_on_the_whole_platform(tenants):
    with pytest.raises(ApplicationError) as refused:
        worker_platform_block(worker=tenants.worker, actor=tenants.a, reason="I dislike them")
    assert refused.value.status == 403
    tenants.worker.refresh_from_db()
    assert not tenants.worker.blocked
    assert not AuditEvent.objects.filter(action=AuditAction.WORKER_PLATFORM_BLOCK).exists()


def test_a_platform_block_needs_a_reason(tenants):
    staff = user_with_role("requester", username="staff", is_staff=True)
    with pytest.raises(ApplicationError, match="reason"):
        worker_platform_block(worker=tenants.worker, actor=staff, reason="  ")


def test_one_standing_per_requester_and_worker(tenants):
    with pytest.raises(IntegrityError):
        WorkerStanding.objects.create(worker=tenants.worker, requester=tenants.a)


def test_gold_disputes_leave_out_answers_of_workers_the_owner_blocked_only(tenants, settings):
    """B's block silences the worker's gold answers on B's campaign; A's block does not reach B's campaign."""
    settings.QUALITY_GOLD_DISPUTE_MIN_ANSWERS = 1
    gold_negative = tenants.assignment_b.hit.items.get(role="gold_negative").pair_id  # the worker said "yes"
    assert gold_pairs_disputed(campaign=tenants.campaign_b, pair_ids=[gold_negative]) == {}
    worker_unblock(worker=tenants.worker, requester=tenants.b, actor=tenants.b, reason="appeal")
    assert gold_pairs_disputed(campaign=tenants.campaign_b, pair_ids=[gold_negative]) == {gold_negative: (1, 1)}
    worker_block(worker=tenants.worker, requester=tenants.a, actor=tenants.a, reason="A's own doubts")
    assert gold_pairs_disputed(campaign=tenants.campaign_b, pair_ids=[gold_negative]) == {gold_negative: (1, 1)}
