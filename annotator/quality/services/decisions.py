"""Decisions on submitted work: approve, reject (one or many), the HIT's status after them, the campaign's
tolerance for gold misses.

Lock order, everywhere in services/quality/: Assignment row, then Worker row, then Hit row. Every status
change goes through assignment_transition and leaves an AssignmentEvent (from, to, actor, reason). A
decision on an MTurk assignment is also written for MTurk in the same transaction and sent after commit
(annotator.quality.services.external_decisions).
"""

from __future__ import annotations

from django.db import transaction

from annotator.campaigns.models.campaign import Hit, HitStatus
from annotator.campaigns.services.budget import campaign_budget_enforce
from annotator.core.errors import ApplicationError
from annotator.core.models.audit import AuditAction
from annotator.core.services.audit import audit_record
from annotator.crowd.models.crowd import Assignment, AssignmentStatus
from annotator.crowd.services.assignments import assignment_transition
from annotator.quality.services.external_decisions import external_decision_record
from annotator.quality.services.trust import worker_trust_refresh


def hit_status_refresh(*, hit_id: int) -> Hit:
    """Set Hit.status from its approved assignments: complete when approved >= assignments_required.

    Takes SELECT ... FOR UPDATE on the Hit row; idempotent; a cancelled HIT stays cancelled.
    """
    with transaction.atomic():
        hit = Hit.objects.select_for_update().get(pk=hit_id)
        if hit.status == HitStatus.CANCELLED:
            return hit
        approved = hit.assignments.filter(status=AssignmentStatus.APPROVED).count()
        status = HitStatus.COMPLETE if approved >= hit.assignments_required else HitStatus.OPEN
        if status != hit.status:
            hit.status = status
            hit.save(update_fields=["status"])
        return hit


def _audit_override(*, assignment: Assignment, target: str, actor, reason: str) -> None:
    """An approved assignment rejected, or a rejected one approved, is an audit event."""
    if assignment.status in (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED):
        audit_record(
            action=AuditAction.APPROVAL_OVERRIDE,
            actor=actor,
            worker=assignment.worker,
            campaign=assignment.hit.campaign,
            detail={"assignment": assignment.pk, "from": assignment.status, "to": target, "reason": reason[:500]},
        )


def assignment_approve(*, assignment: Assignment, actor=None, reason: str = "") -> Assignment:
    """Approve a submitted (or overturn a rejected) assignment; records who, when and why.

    Locks the Assignment row, then the Hit row (via hit_status_refresh). Idempotent: approving an
    approved assignment changes nothing and records nothing.
    """
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.status != AssignmentStatus.APPROVED:
            _audit_override(assignment=locked, target=AssignmentStatus.APPROVED, actor=actor, reason=reason)
            assignment_transition(assignment=locked, target=AssignmentStatus.APPROVED, actor=actor, reason=reason)
            hit_status_refresh(hit_id=locked.hit_id)
            external_decision_record(assignment=locked, approve=True, reason=reason)
            worker_trust_refresh(worker_id=locked.worker_id, requester_id=locked.hit.campaign.owner_id)
    campaign_budget_enforce(campaign_id=locked.hit.campaign_id)
    return locked


def assignment_reject(*, assignment: Assignment, actor=None, reason: str) -> Assignment:
    """Reject a submitted (or overturn an approved) assignment with a reason.

    The rejected lease no longer counts against the HIT's redundancy, so the HIT is offered to another
    worker (never to the same one: one assignment per worker and HIT). Locks the Assignment row, then
    the Hit row. Idempotent: rejecting a rejected assignment changes nothing.
    """
    if not (reason or "").strip():
        raise ApplicationError("Give a reason for the rejection; the worker sees it.")
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.status != AssignmentStatus.REJECTED:
            _audit_override(assignment=locked, target=AssignmentStatus.REJECTED, actor=actor, reason=reason)
            assignment_transition(assignment=locked, target=AssignmentStatus.REJECTED, actor=actor, reason=reason)
            hit_status_refresh(hit_id=locked.hit_id)
            external_decision_record(assignment=locked, approve=False, reason=reason)
            worker_trust_refresh(worker_id=locked.worker_id, requester_id=locked.hit.campaign.owner_id)
    return locked


def assignments_bulk_decide(*, assignment_ids: list[int], approve: bool, actor=None, reason: str = "") -> int:
    """Approve or reject many assignments, one transaction each (a bad one does not undo the others).

    Returns how many changed. Raises ApplicationError listing the ids that could not be decided.
    """
    if not assignment_ids:
        raise ApplicationError("Select at least one assignment.")
    if not approve and not (reason or "").strip():
        raise ApplicationError("Give a reason for the rejection; the workers see it.")
    changed, failed = 0, {}
    for assignment in Assignment.objects.filter(pk__in=assignment_ids).order_by("pk"):
        before = assignment.status
        try:
            if approve:
                after = assignment_approve(assignment=assignment, actor=actor, reason=reason).status
            else:
                after = assignment_reject(assignment=assignment, actor=actor, reason=reason).status
        except ApplicationError as error:
            failed[assignment.pk] = error.message
            continue
        changed += int(after != before)
    if failed:
        raise ApplicationError(
            f"{len(failed)} of the selected assignments could not be decided; {changed} were.",
            extra={"failed": failed},
            status=409,
        )
    return changed


def assignments_bulk_approve(*, assignment_ids: list[int], actor=None, reason: str = "") -> int:
    """Approve many assignments; see assignments_bulk_decide."""
    return assignments_bulk_decide(assignment_ids=assignment_ids, approve=True, actor=actor, reason=reason)


def assignments_bulk_reject(*, assignment_ids: list[int], actor=None, reason: str) -> int:
    """Reject many assignments; see assignments_bulk_decide."""
    return assignments_bulk_decide(assignment_ids=assignment_ids, approve=False, actor=actor, reason=reason)
