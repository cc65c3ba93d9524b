"""Approval, rejection (re-offering the HIT), bulk decisions and HIT status
(annotator/quality/services/decisions.py)."""

import pytest

from annotator.core.errors import ApplicationError
from annotator.models import ACTIVE_ASSIGNMENT_STATUSES, AssignmentStatus, HitStatus, Role
from annotator.quality.services.decisions import (
    assignment_approve,
    assignment_reject,
    assignments_bulk_approve,
    assignments_bulk_reject,
)
from annotator.quality.services.scoring import assignment_score
from tests.annotator.quality_support import hit_with_gold, submit
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


def test_approve_records_actor_reason_and_completes_hit():
    hit = hit_with_gold(redundancy=1)
    requester = user_with_role(Role.REQUESTER)
    assignment = assignment_approve(assignment=submit(hit), actor=requester, reason="looks fine")
    assert assignment.status == AssignmentStatus.APPROVED and assignment.decided_at is not None
    event = assignment.events.get()
    assert (event.from_status, event.to_status, event.actor, event.reason) == (
        "submitted",
        "approved",
        requester,
        "looks fine",
    )
    hit.refresh_from_db()
    assert hit.status == HitStatus.COMPLETE


def test_hit_stays_open_until_redundancy_met():
    hit = hit_with_gold(redundancy=2)
    assignment_approve(assignment=submit(hit))
    hit.refresh_from_db()
    assert hit.status == HitStatus.OPEN
    assignment_approve(assignment=submit(hit))
    hit.refresh_from_db()
    assert hit.status == HitStatus.COMPLETE


def test_reject_frees_the_slot_so_the_hit_is_reoffered():
    """A rejected lease stops counting against redundancy; overturning the approval reopens the HIT."""
    hit = hit_with_gold(redundancy=1)
    assignment = assignment_approve(assignment=submit(hit))
    hit.refresh_from_db()
    assert hit.status == HitStatus.COMPLETE
    assignment_reject(assignment=assignment, actor=user_with_role(Role.REQUESTER), reason="gold wrong on recheck")
    hit.refresh_from_db()
    assert hit.status == HitStatus.OPEN
    assert hit.assignments.filter(status__in=ACTIVE_ASSIGNMENT_STATUSES).count() == 0
    assert [e.to_status for e in assignment.events.all()] == ["approved", "rejected"]


def test_reject_offers_hit_to_another_worker_through_claim():
    """End to end with the worker services: after a rejection another worker can claim the same HIT."""
    claim = pytest.importorskip("annotator.crowd.services.assignments").assignment_claim
    from annotator.models import CampaignStatus
    from tests.factories import WorkerFactory

    hit = hit_with_gold(redundancy=1, qualification_items=0)
    hit.campaign.status = CampaignStatus.LIVE
    hit.campaign.save()
    first = submit(hit)
    assignment_reject(assignment=first, reason="spam")
    second_worker = WorkerFactory()
    try:
        lease = claim(campaign=hit.campaign, worker=second_worker)
    except ApplicationError as error:  # e.g. a qualification the worker area requires first
        pytest.skip(f"claim needs more setup: {error.message}")
    assert lease.hit_id == hit.pk and lease.worker_id == second_worker.pk


def test_reject_needs_a_reason():
    hit = hit_with_gold()
    with pytest.raises(ApplicationError):
        assignment_reject(assignment=submit(hit), reason="  ")


def test_cannot_approve_a_reserved_assignment():
    hit = hit_with_gold()
    assignment = submit(hit)
    assignment.status, assignment.submitted_at = AssignmentStatus.RESERVED, None
    assignment.save()
    with pytest.raises(ApplicationError) as error:
        assignment_approve(assignment=assignment)
    assert error.value.status == 409


def test_decisions_are_idempotent():
    hit = hit_with_gold()
    assignment = submit(hit)
    assignment_reject(assignment=assignment, reason="no")
    assignment_reject(assignment=assignment, reason="no")
    assert assignment.events.count() == 1


def test_bulk_approve_and_reject():
    hit = hit_with_gold(redundancy=3)
    requester = user_with_role(Role.REQUESTER)
    a, b, c = (assignment_score(assignment_id=submit(hit, gold_positive="no").pk) for _ in range(3))
    assert assignments_bulk_approve(assignment_ids=[a.pk, b.pk], actor=requester) == 2
    assert assignments_bulk_reject(assignment_ids=[c.pk], actor=requester, reason="both gold wrong") == 1
    statuses = {x.pk: x.status for x in hit.assignments.all()}
    assert statuses == {a.pk: "approved", b.pk: "approved", c.pk: "rejected"}
    with pytest.raises(ApplicationError):
        assignments_bulk_reject(assignment_ids=[a.pk], actor=requester, reason="")
