"""Worker trust writes: refresh the automatic soft block, block and unblock by a requester.

Thresholds come from settings, QUALITY_* (env names and defaults in docs/quality.md).
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q

from annotator.analysis.trust import Trust, TrustPolicy, soft_block_reason
from annotator.errors import ApplicationError
from annotator.models import (
    FLAG_LOW_TRUST,
    Assignment,
    AssignmentStatus,
    AuditAction,
    QualificationAttempt,
    TrustAction,
    Worker,
    WorkerTrustEvent,
)
from annotator.services.accounts.audit import audit_record


def trust_policy() -> TrustPolicy:
    """The soft-block and trusted thresholds from settings (read at call time, never at import)."""
    defaults = TrustPolicy()
    names = {
        "min_gold": "QUALITY_SOFT_BLOCK_MIN_GOLD",
        "gold_accuracy": "QUALITY_SOFT_BLOCK_GOLD_ACCURACY",
        "min_decided": "QUALITY_SOFT_BLOCK_MIN_DECIDED",
        "approval_rate": "QUALITY_SOFT_BLOCK_APPROVAL_RATE",
        "careful_accuracy": "QUALITY_CAREFUL_ACCURACY",
        "chance_accuracy": "QUALITY_CHANCE_ACCURACY",
        "spammer_prior": "QUALITY_SPAMMER_PRIOR",
        "soft_block_posterior": "QUALITY_SOFT_BLOCK_POSTERIOR",
        "trusted_min_gold": "QUALITY_TRUSTED_MIN_GOLD",
        "trusted_max_posterior": "QUALITY_TRUSTED_MAX_POSTERIOR",
    }
    return TrustPolicy(**{field: getattr(settings, name, getattr(defaults, field)) for field, name in names.items()})


def _qualification_gold(worker: Worker) -> tuple[int, int]:
    """Right and total answers of the worker's finished qualification attempts (all gold items)."""
    correct = total = 0
    for score, items in QualificationAttempt.objects.filter(worker=worker, passed__isnull=False).values_list(
        "score", "items"
    ):
        total += len(items or [])
        correct += round((score or 0.0) * len(items or []))
    return correct, total


def worker_trust(*, worker: Worker) -> Trust:
    """The worker's trust numbers over all campaigns (a read; used by the services and the pages).

    Gold evidence = the gold items of scored HITs (Worker.gold_correct/gold_total) plus the answers of
    finished qualification attempts, which are gold items too.
    """
    qualification_correct, qualification_total = _qualification_gold(worker)
    counts = worker.assignments.aggregate(
        approved=Count("pk", filter=Q(status=AssignmentStatus.APPROVED)),
        rejected=Count("pk", filter=Q(status=AssignmentStatus.REJECTED)),
        done=Count(
            "pk",
            filter=Q(status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED]),
        ),
    )
    return Trust(
        gold_correct=worker.gold_correct + qualification_correct,
        gold_total=worker.gold_total + qualification_total,
        approved=counts["approved"],
        rejected=counts["rejected"],
        hits_done=counts["done"],
    )


def worker_trust_refresh(*, worker_id: int) -> Worker:
    """Re-apply the soft-block rule to a worker; soft-blocking sends their pending work to review.

    Takes SELECT ... FOR UPDATE on the Worker row. Idempotent: an unchanged verdict writes nothing. A
    requester's unblock wins until the worker has gathered `min_gold` new gold answers since then.
    """
    policy = trust_policy()
    with transaction.atomic():
        worker = Worker.objects.select_for_update().get(pk=worker_id)
        reason = soft_block_reason(worker_trust(worker=worker), policy)
        last_unblock = worker.trust_events.filter(action=TrustAction.UNBLOCK).order_by("-created_at", "-id").first()
        if reason and last_unblock and worker.gold_total - last_unblock.gold_total_at < policy.min_gold:
            reason = ""  # the requester vouched for this worker; wait for fresh evidence
        if bool(reason) != worker.soft_blocked:
            worker.soft_blocked = bool(reason)
            worker.save(update_fields=["soft_blocked"])
            WorkerTrustEvent.objects.create(
                worker=worker,
                action=TrustAction.SOFT_BLOCK if reason else TrustAction.SOFT_UNBLOCK,
                reason=(reason or "the evidence no longer meets the soft-block rule")[:1000],
                gold_total_at=worker.gold_total,
            )
            audit_record(
                action=AuditAction.WORKER_SOFT_BLOCK if reason else AuditAction.WORKER_SOFT_UNBLOCK,
                worker=worker,
                detail={"reason": (reason or "")[:500]},
            )
            if reason:
                transaction.on_commit(lambda: assignments_flag_pending(worker_id=worker_id))
        return worker


def worker_block(*, worker: Worker, actor, reason: str) -> Worker:
    """A requester blocks a worker (no new HITs anywhere); the reason is kept in the history.

    Locks the Worker row; idempotent (blocking a blocked worker only records nothing new).
    """
    if not (reason or "").strip():
        raise ApplicationError("Give a reason for the block.")
    with transaction.atomic():
        locked = Worker.objects.select_for_update().get(pk=worker.pk)
        if locked.blocked:
            return locked
        locked.blocked = True
        locked.blocked_reason = reason[:500]
        locked.save(update_fields=["blocked", "blocked_reason"])
        WorkerTrustEvent.objects.create(
            worker=locked, action=TrustAction.BLOCK, actor=actor, reason=reason[:1000], gold_total_at=locked.gold_total
        )
        audit_record(action=AuditAction.WORKER_UNBLOCK, actor=actor, worker=locked, detail={"reason": reason[:500]})
        audit_record(action=AuditAction.WORKER_BLOCK, actor=actor, worker=locked, detail={"reason": reason[:500]})
        transaction.on_commit(lambda: assignments_flag_pending(worker_id=locked.pk, flag=FLAG_LOW_TRUST))
        return locked


def worker_unblock(*, worker: Worker, actor, reason: str) -> Worker:
    """A requester lifts a block and any soft block; the reason is kept in the history.

    Locks the Worker row; idempotent. The automatic rule only soft-blocks again on fresh evidence.
    """
    if not (reason or "").strip():
        raise ApplicationError("Give a reason for lifting the block.")
    with transaction.atomic():
        locked = Worker.objects.select_for_update().get(pk=worker.pk)
        if not (locked.blocked or locked.soft_blocked):
            return locked
        locked.blocked = False
        locked.soft_blocked = False
        locked.blocked_reason = ""
        locked.save(update_fields=["blocked", "soft_blocked", "blocked_reason"])
        WorkerTrustEvent.objects.create(
            worker=locked,
            action=TrustAction.UNBLOCK,
            actor=actor,
            reason=reason[:1000],
            gold_total_at=locked.gold_total,
        )
        return locked


def assignments_flag_pending(*, worker_id: int, flag: str = FLAG_LOW_TRUST) -> int:
    """Send a worker's submitted, undecided assignments to the review queue with `flag`.

    Used when a worker is (soft-)blocked: work waiting for auto-approval gets a person's look instead.
    Locks each Assignment row; idempotent (a flag is added once). Returns how many were flagged.
    """
    flagged = 0
    pending = Assignment.objects.filter(worker_id=worker_id, status=AssignmentStatus.SUBMITTED).values_list(
        "pk", flat=True
    )
    for pk in list(pending):
        with transaction.atomic():
            assignment = Assignment.objects.select_for_update().get(pk=pk)
            if assignment.status != AssignmentStatus.SUBMITTED or flag in assignment.flags:
                continue
            assignment.flags = [*assignment.flags, flag]
            assignment.auto_approve_at = None
            assignment.save(update_fields=["flags", "auto_approve_at"])
            flagged += 1
    return flagged
