"""Worker trust writes, scoped to the requester (the campaign owner): the automatic soft block, a
requester's block and unblock, and the platform-wide block that only staff may set.

A requester is a tenant. Each (requester, worker) pair has one WorkerStanding: the requester's block, the
automatic soft block and the gold record the worker earned on that requester's campaigns. A claim checks
the campaign owner's standing and the platform block (Worker.blocked); one requester's decisions never
stop a worker on another requester's campaign. A requester who opts in (Profile.share_gold_record) adds
their gold records to a shared, anonymised reputation (totals only) and counts it in their own figures.

Thresholds come from settings, QUALITY_* (env names and defaults in docs/quality.md).
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotator.analysis.trust import Trust, TrustPolicy, soft_block_reason
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Profile
from annotator.core.models.audit import AuditAction
from annotator.core.services.audit import audit_record
from annotator.crowd.models.crowd import FLAG_LOW_TRUST, Assignment, AssignmentStatus, QualificationAttempt, Worker
from annotator.crowd.models.standing import TrustAction, WorkerStanding, WorkerTrustEvent


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


def _qualification_gold(*, worker: Worker, requester_id: int) -> tuple[int, int]:
    """Right and total answers of the worker's finished qualification attempts on the requester's campaigns."""
    correct = total = 0
    for score, items in QualificationAttempt.objects.filter(
        worker=worker, campaign__owner_id=requester_id, passed__isnull=False
    ).values_list("score", "items"):
        total += len(items or [])
        correct += round((score or 0.0) * len(items or []))
    return correct, total


def worker_shared_gold(*, worker: Worker, exclude_requester_id: int | None = None) -> tuple[int, int]:
    """The shared, anonymised reputation: the gold record summed over the requesters who opted in (totals
    only; never which requester or campaign). A read."""
    rows = WorkerStanding.objects.filter(worker=worker, requester__profile__share_gold_record=True)
    if exclude_requester_id is not None:
        rows = rows.exclude(requester_id=exclude_requester_id)
    sums = rows.aggregate(correct=Sum("gold_correct"), total=Sum("gold_total"))
    return sums["correct"] or 0, sums["total"] or 0


def _shares(requester_id: int) -> bool:
    return Profile.objects.filter(user_id=requester_id, share_gold_record=True).exists()


def worker_standing(*, worker: Worker, requester_id: int) -> WorkerStanding | None:
    """The requester's standing with the worker, or None when they have none yet (a read)."""
    return WorkerStanding.objects.filter(worker=worker, requester_id=requester_id).first()


def worker_trust(*, worker: Worker, requester_id: int) -> Trust:
    """The worker's trust numbers as one requester sees them (a read; used by the services and the pages).

    Gold evidence = the gold items of scored HITs on the requester's campaigns (WorkerStanding) plus the
    answers of finished qualification attempts on them, which are gold items too (kept apart as `test_*`:
    they may block a worker but never make one trusted); plus the shared reputation when the requester
    opted in. Approvals and HITs count the requester's campaigns only.
    """
    standing = worker_standing(worker=worker, requester_id=requester_id)
    gold_correct, gold_total = (standing.gold_correct, standing.gold_total) if standing else (0, 0)
    qualification_correct, qualification_total = _qualification_gold(worker=worker, requester_id=requester_id)
    shared_correct = shared_total = 0
    if _shares(requester_id):
        shared_correct, shared_total = worker_shared_gold(worker=worker, exclude_requester_id=requester_id)
    counts = worker.assignments.filter(hit__campaign__owner_id=requester_id).aggregate(
        approved=Count("pk", filter=Q(status=AssignmentStatus.APPROVED)),
        rejected=Count("pk", filter=Q(status=AssignmentStatus.REJECTED)),
        done=Count(
            "pk",
            filter=Q(status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED]),
        ),
    )
    return Trust(
        gold_correct=gold_correct + qualification_correct + shared_correct,
        gold_total=gold_total + qualification_total + shared_total,
        test_correct=qualification_correct,
        test_total=qualification_total,
        approved=counts["approved"],
        rejected=counts["rejected"],
        hits_done=counts["done"],
    )


def _locked_standing(*, worker_id: int, requester_id: int) -> WorkerStanding:
    """The standing row, created on first use, then locked (SELECT ... FOR UPDATE). Call inside atomic."""
    WorkerStanding.objects.get_or_create(worker_id=worker_id, requester_id=requester_id)
    return (
        WorkerStanding.objects.select_for_update()
        .select_related("worker")
        .get(worker_id=worker_id, requester_id=requester_id)
    )


def worker_standing_gold_add(*, worker_id: int, requester_id: int, correct: int, total: int) -> WorkerStanding:
    """Add one scored HIT's gold outcome to the requester's record of the worker.

    A miss starts the clean streak (adaptive gold) again from 0; a clean HIT lengthens it.
    Locks the standing row; the caller (gold scoring) makes it happen once per assignment.
    """
    with transaction.atomic():
        standing = _locked_standing(worker_id=worker_id, requester_id=requester_id)
        standing.gold_correct += correct
        standing.gold_total += total
        standing.gold_clean_streak = 0 if correct < total else standing.gold_clean_streak + total
        standing.save(update_fields=["gold_correct", "gold_total", "gold_clean_streak", "updated_at"])
        return standing


def worker_trust_refresh(*, worker_id: int, requester_id: int) -> WorkerStanding:
    """Re-apply the soft-block rule to the requester's standing with a worker; soft-blocking sends the
    worker's pending work on that requester's campaigns to review.

    Takes SELECT ... FOR UPDATE on the WorkerStanding row. Idempotent: an unchanged verdict writes nothing.
    The requester's unblock wins until the worker has gathered `min_gold` new gold answers since then.
    """
    policy = trust_policy()
    with transaction.atomic():
        standing = _locked_standing(worker_id=worker_id, requester_id=requester_id)
        worker = standing.worker
        reason = soft_block_reason(worker_trust(worker=worker, requester_id=requester_id), policy)
        last_unblock = (
            worker.trust_events.filter(action=TrustAction.UNBLOCK, requester_id=requester_id)
            .order_by("-created_at", "-id")
            .first()
        )
        if reason and last_unblock and standing.gold_total - last_unblock.gold_total_at < policy.min_gold:
            reason = ""  # the requester vouched for this worker; wait for fresh evidence
        if bool(reason) != standing.soft_blocked:
            standing.soft_blocked = bool(reason)
            standing.soft_block_reason = reason[:1000]
            standing.save(update_fields=["soft_blocked", "soft_block_reason", "updated_at"])
            WorkerTrustEvent.objects.create(
                worker=worker,
                requester_id=requester_id,
                action=TrustAction.SOFT_BLOCK if reason else TrustAction.SOFT_UNBLOCK,
                reason=(reason or "the evidence no longer meets the soft-block rule")[:1000],
                gold_total_at=standing.gold_total,
            )
            audit_record(
                action=AuditAction.WORKER_SOFT_BLOCK if reason else AuditAction.WORKER_SOFT_UNBLOCK,
                subject_user=standing.requester,
                worker=worker,
                detail={"reason": (reason or "")[:500]},
            )
            if reason:
                transaction.on_commit(lambda: assignments_flag_pending(worker_id=worker_id, requester_id=requester_id))
        return standing


def worker_block(*, worker: Worker, requester, actor, reason: str) -> WorkerStanding:
    """Block a worker from the requester's campaigns (and only those); the reason is kept in the history.

    `requester` is the tenant whose standing changes (the campaign owner); `actor` is who acted (the owner
    or someone the campaign is shared with). Locks the WorkerStanding row; idempotent (blocking a blocked
    worker records nothing new).
    """
    if not (reason or "").strip():
        raise ApplicationError("Give a reason for the block.")
    with transaction.atomic():
        standing = _locked_standing(worker_id=worker.pk, requester_id=requester.pk)
        if standing.blocked:
            return standing
        standing.blocked = True
        standing.blocked_reason = reason[:500]
        standing.blocked_by = actor
        standing.blocked_at = timezone.now()
        standing.save(update_fields=["blocked", "blocked_reason", "blocked_by", "blocked_at", "updated_at"])
        WorkerTrustEvent.objects.create(
            worker=worker,
            requester=requester,
            action=TrustAction.BLOCK,
            actor=actor,
            reason=reason[:1000],
            gold_total_at=standing.gold_total,
        )
        audit_record(
            action=AuditAction.WORKER_BLOCK,
            actor=actor,
            subject_user=requester,
            worker=worker,
            detail={"reason": reason[:500]},
        )
        transaction.on_commit(
            lambda: assignments_flag_pending(worker_id=worker.pk, requester_id=requester.pk, flag=FLAG_LOW_TRUST)
        )
        return standing


def worker_unblock(*, worker: Worker, requester, actor, reason: str) -> WorkerStanding:
    """Lift the requester's block and any soft block of theirs; the reason is kept in the history.

    Locks the WorkerStanding row; idempotent. The automatic rule only soft-blocks again on fresh evidence.
    """
    if not (reason or "").strip():
        raise ApplicationError("Give a reason for lifting the block.")
    with transaction.atomic():
        standing = _locked_standing(worker_id=worker.pk, requester_id=requester.pk)
        if not (standing.blocked or standing.soft_blocked):
            return standing
        standing.blocked = False
        standing.soft_blocked = False
        standing.blocked_reason = standing.soft_block_reason = ""
        standing.blocked_by = standing.blocked_at = None
        standing.save(
            update_fields=[
                "blocked",
                "soft_blocked",
                "blocked_reason",
                "soft_block_reason",
                "blocked_by",
                "blocked_at",
                "updated_at",
            ]
        )
        WorkerTrustEvent.objects.create(
            worker=worker,
            requester=requester,
            action=TrustAction.UNBLOCK,
            actor=actor,
            reason=reason[:1000],
            gold_total_at=standing.gold_total,
        )
        audit_record(
            action=AuditAction.WORKER_UNBLOCK,
            actor=actor,
            subject_user=requester,
            worker=worker,
            detail={"reason": reason[:500]},
        )
        return standing


def _require_staff(actor) -> None:
    if not (actor is not None and (actor.is_staff or actor.is_superuser)):
        raise ApplicationError("Only staff may block a worker on the whole platform.", status=403)


def worker_platform_block(*, worker: Worker, actor, reason: str) -> Worker:
    """Staff block a worker on the whole platform: no new HITs on any campaign. Audited.

    Refuses anyone but staff (403) and an empty reason (400). Locks the Worker row; idempotent.
    """
    _require_staff(actor)
    if not (reason or "").strip():
        raise ApplicationError("Give a reason for the platform block.")
    with transaction.atomic():
        locked = Worker.objects.select_for_update().get(pk=worker.pk)
        if locked.blocked:
            return locked
        locked.blocked = True
        locked.blocked_reason = reason[:500]
        locked.save(update_fields=["blocked", "blocked_reason"])
        WorkerTrustEvent.objects.create(
            worker=locked, action=TrustAction.PLATFORM_BLOCK, actor=actor, reason=reason[:1000]
        )
        audit_record(
            action=AuditAction.WORKER_PLATFORM_BLOCK, actor=actor, worker=locked, detail={"reason": reason[:500]}
        )
        transaction.on_commit(lambda: assignments_flag_pending(worker_id=locked.pk, flag=FLAG_LOW_TRUST))
        return locked


def worker_platform_unblock(*, worker: Worker, actor, reason: str) -> Worker:
    """Staff lift a platform block. Audited; refuses anyone but staff. Locks the Worker row; idempotent."""
    _require_staff(actor)
    if not (reason or "").strip():
        raise ApplicationError("Give a reason for lifting the platform block.")
    with transaction.atomic():
        locked = Worker.objects.select_for_update().get(pk=worker.pk)
        if not locked.blocked:
            return locked
        locked.blocked = False
        locked.blocked_reason = ""
        locked.save(update_fields=["blocked", "blocked_reason"])
        WorkerTrustEvent.objects.create(
            worker=locked, action=TrustAction.PLATFORM_UNBLOCK, actor=actor, reason=reason[:1000]
        )
        audit_record(
            action=AuditAction.WORKER_PLATFORM_UNBLOCK, actor=actor, worker=locked, detail={"reason": reason[:500]}
        )
        return locked


def assignments_flag_pending(*, worker_id: int, requester_id: int | None = None, flag: str = FLAG_LOW_TRUST) -> int:
    """Send a worker's submitted, undecided assignments to the review queue with `flag`: those on the
    requester's campaigns, or on every campaign when `requester_id` is None (a platform block).

    Used when a worker is (soft-)blocked: work waiting for auto-approval gets a person's look instead.
    Locks each Assignment row; idempotent (a flag is added once). Returns how many were flagged.
    """
    flagged = 0
    pending = Assignment.objects.filter(worker_id=worker_id, status=AssignmentStatus.SUBMITTED)
    if requester_id is not None:
        pending = pending.filter(hit__campaign__owner_id=requester_id)
    for pk in list(pending.values_list("pk", flat=True)):
        with transaction.atomic():
            assignment = Assignment.objects.select_for_update().get(pk=pk)
            if assignment.status != AssignmentStatus.SUBMITTED or flag in assignment.flags:
                continue
            assignment.flags = [*assignment.flags, flag]
            assignment.auto_approve_at = None
            assignment.save(update_fields=["flags", "auto_approve_at"])
            flagged += 1
    return flagged
