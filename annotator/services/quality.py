"""Quality control writes: gold scoring, the decision policy, approval and rejection.

Lock order, everywhere in this module: Assignment row, then Worker row, then Hit row. Every status change
goes through ASSIGNMENT_TRANSITIONS and leaves an AssignmentEvent (from, to, actor, reason).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotator.analysis.gold import (
    gold_choice_right,
    gold_score_right,
    peer_agreement,
    same_answer_throughout,
    too_fast,
)
from annotator.analysis.trust import is_trusted
from annotator.errors import ApplicationError
from annotator.models import (
    Answer,
    Assignment,
    AssignmentStatus,
    Campaign,
    GoldFailAction,
    Hit,
    HitItem,
    HitStatus,
    ItemRole,
    Scale,
    Worker,
)
from annotator.services.assignments import assignment_transition
from annotator.services.trust import trust_policy, worker_trust, worker_trust_refresh

logger = logging.getLogger(__name__)

GOLD_ROLES = (ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE)

# Review reasons stored in Assignment.flags (a non-empty list means "in the review queue").
FLAG_GOLD_FAILED = "gold_failed"
FLAG_TOO_FAST = "too_fast"
FLAG_SAME_ANSWER = "same_answer"
FLAG_LOW_TRUST = "low_trust"
FLAG_PEER_DISAGREEMENT = "disagrees_with_peers"
FLAG_LABELS = {
    FLAG_GOLD_FAILED: "a gold item answered wrong",
    FLAG_TOO_FAST: "implausibly fast",
    FLAG_SAME_ANSWER: "the same answer throughout",
    FLAG_LOW_TRUST: "the worker's gold record looks like guessing",
    FLAG_PEER_DISAGREEMENT: "disagrees with the other workers on most pairs",
}


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


def _external_decision(*, assignment: Assignment, approve: bool, reason: str) -> None:
    """Tell MTurk about the decision when the assignment came from there.

    The seam: `annotator.mturk` (the worker-UI area) may offer `assignment_approve_external(assignment=...)`
    and `assignment_reject_external(assignment=..., reason=...)`; called after commit so a failed call to
    AWS never undoes the local decision (it is retried from the MTurk sync instead).
    """
    if not assignment.external_assignment_id:
        return
    try:
        from annotator import mturk  # optional module of the worker-UI area
    except ImportError:
        logger.info("No annotator.mturk module; assignment %s decided locally only", assignment.pk)
        return
    name = "assignment_approve_external" if approve else "assignment_reject_external"
    call = getattr(mturk, name, None)
    if call is None:
        logger.info("annotator.mturk has no %s; assignment %s decided locally only", name, assignment.pk)
        return
    kwargs = {"assignment": assignment} if approve else {"assignment": assignment, "reason": reason}
    transaction.on_commit(lambda: call(**kwargs))


def assignment_approve(*, assignment: Assignment, actor=None, reason: str = "") -> Assignment:
    """Approve a submitted (or overturn a rejected) assignment; records who, when and why.

    Locks the Assignment row, then the Hit row (via hit_status_refresh). Idempotent: approving an
    approved assignment changes nothing and records nothing.
    """
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.status != AssignmentStatus.APPROVED:
            assignment_transition(assignment=locked, target=AssignmentStatus.APPROVED, actor=actor, reason=reason)
            hit_status_refresh(hit_id=locked.hit_id)
            _external_decision(assignment=locked, approve=True, reason=reason)
            worker_trust_refresh(worker_id=locked.worker_id)
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
            assignment_transition(assignment=locked, target=AssignmentStatus.REJECTED, actor=actor, reason=reason)
            hit_status_refresh(hit_id=locked.hit_id)
            _external_decision(assignment=locked, approve=False, reason=reason)
            worker_trust_refresh(worker_id=locked.worker_id)
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


def _gold_right(*, role: str, answer: Answer | None, campaign) -> bool:
    if answer is None:
        return False
    if campaign.scale == Scale.SIMILARITY:
        return gold_score_right(role=role, score=answer.score, threshold=campaign.similarity_gold_threshold)
    return gold_choice_right(role=role, choice=answer.choice, strict=campaign.strict_gold)


def gold_pairs_disputed(*, campaign, pair_ids=None, exclude_assignment_id=None) -> dict[int, tuple[int, int]]:
    """Gold pairs the crowd contradicts: at least QUALITY_GOLD_DISPUTE_MIN_ANSWERS scored answers (not from
    blocked or soft-blocked workers, nor careless work; rejected work counts, as it may have been rejected
    for this very item), of which
    at least QUALITY_GOLD_DISPUTE_SHARE are "wrong". Such a gold item is more likely wrong than the
    workers (a random "negative" that truly matches, an original caption that does not describe its
    image): it stops counting in scoring and is listed on the quality page. Returns pair -> (wrong, n).
    A read; no locks."""
    min_answers = getattr(settings, "QUALITY_GOLD_DISPUTE_MIN_ANSWERS", 5)
    share = getattr(settings, "QUALITY_GOLD_DISPUTE_SHARE", 0.5)
    answers = (
        Answer.objects.filter(
            item__hit__campaign=campaign, item__role__in=GOLD_ROLES, assignment__scored_at__isnull=False
        )
        .exclude(assignment__worker__blocked=True)
        .exclude(assignment__worker__soft_blocked=True)
        .select_related("item", "assignment")
    )
    if pair_ids is not None:
        answers = answers.filter(item__pair_id__in=list(pair_ids))
    if exclude_assignment_id is not None:
        answers = answers.exclude(assignment_id=exclude_assignment_id)
    tally: dict[int, list[int]] = {}
    careless = {FLAG_SAME_ANSWER, FLAG_TOO_FAST, FLAG_LOW_TRUST}
    for answer in answers:
        if careless & set(answer.assignment.flags or []):
            continue  # careless work says nothing about the gold item
        entry = tally.setdefault(answer.item.pair_id, [0, 0])
        entry[0] += int(not _gold_right(role=answer.item.role, answer=answer, campaign=campaign))
        entry[1] += 1
    return {pair: (wrong, n) for pair, (wrong, n) in tally.items() if n >= min_answers and wrong >= share * n}


def _gold_outcome(*, assignment: Assignment, campaign) -> tuple[int, int, list[Answer]]:
    items = list(HitItem.objects.filter(hit_id=assignment.hit_id).only("id", "role", "pair_id"))
    answers = {answer.item_id: answer for answer in Answer.objects.filter(assignment=assignment)}
    gold = [item for item in items if item.role in GOLD_ROLES]
    disputed = gold_pairs_disputed(
        campaign=campaign, pair_ids=[item.pair_id for item in gold], exclude_assignment_id=assignment.pk
    )
    correct = total = 0
    for item in gold:
        if item.pair_id in disputed:
            continue  # the crowd says this gold item is wrong: it does not judge this worker
        total += 1
        correct += int(_gold_right(role=item.role, answer=answers.get(item.id), campaign=campaign))
    ordered = [answers[item.id] for item in items if item.id in answers]
    return correct, total, ordered


def assignment_score(*, assignment_id: int) -> Assignment | None:
    """Score a submitted assignment against its gold items and apply the campaign's decision policy.

    Policy: all gold right and nothing suspicious => auto-approve at now + auto_approve_hours (at once
    when that is 0) unless a requester acts first; a gold item wrong => the review queue, or rejected
    when the campaign's gold_fail_action is "reject"; implausibly fast (median seconds per item below
    min_seconds_per_item) or the same answer throughout => the review queue.
    Tolerance (campaign.tolerated_gold_misses, default 0 = ECCV Caption): up to that many gold misses are
    forgiven when the worker's gold record, this HIT included, is trusted (QUALITY_TRUSTED_*); otherwise
    the assignment waits for auto-approval, where the other workers' answers decide (see
    assignments_auto_approve_due). With auto_approve_hours = 0 there is no such wait: it goes to review.

    Locks the Assignment row (SELECT ... FOR UPDATE), then the Worker row. Idempotent: `scored_at` is
    set in the same transaction, so a second call (a redelivered task after a worker was killed) finds
    it and changes nothing; the worker's trust counters move exactly once. Returns None when there is
    nothing to score (no such assignment, or not submitted yet).
    """
    with transaction.atomic():
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("hit__campaign")
            .filter(pk=assignment_id)
            .first()
        )
        if assignment is None or assignment.scored_at is not None:
            return assignment
        if assignment.status in (AssignmentStatus.RESERVED, AssignmentStatus.RETURNED, AssignmentStatus.EXPIRED):
            return None
        campaign = assignment.hit.campaign
        correct, total, answers = _gold_outcome(assignment=assignment, campaign=campaign)
        flags: list[str] = []
        if correct < total:
            flags.append(FLAG_GOLD_FAILED)
        if too_fast(seconds=[a.seconds_spent for a in answers], min_seconds_per_item=campaign.min_seconds_per_item):
            flags.append(FLAG_TOO_FAST)
        values = [a.score if campaign.scale == Scale.SIMILARITY else a.choice for a in answers]
        if same_answer_throughout(values=values):
            flags.append(FLAG_SAME_ANSWER)

        if 0 < total - correct <= campaign.tolerated_gold_misses:
            record = worker_trust(worker=Worker.objects.get(pk=assignment.worker_id))
            record = replace(record, gold_correct=record.gold_correct + correct, gold_total=record.gold_total + total)
            others = [flag for flag in flags if flag != FLAG_GOLD_FAILED]
            if not others and (is_trusted(record, trust_policy()) or campaign.auto_approve_hours > 0):
                # Trusted: an established record absorbs a slip. Otherwise the peers decide before the
                # auto-approval (assignments_auto_approve_due), when their answers are in.
                flags.remove(FLAG_GOLD_FAILED)

        now = timezone.now()
        assignment.gold_correct, assignment.gold_total = correct, total
        assignment.scored_at = now
        Worker.objects.filter(pk=assignment.worker_id).update(
            gold_correct=F("gold_correct") + correct, gold_total=F("gold_total") + total
        )
        worker = worker_trust_refresh(worker_id=assignment.worker_id)
        if not flags and worker.soft_blocked:
            flags.append(FLAG_LOW_TRUST)
        assignment.flags = flags
        undecided = assignment.status == AssignmentStatus.SUBMITTED  # a requester may have acted already
        if undecided and not flags:
            assignment.auto_approve_at = now + timedelta(hours=max(campaign.auto_approve_hours, 0.0))
        assignment.save(update_fields=["gold_correct", "gold_total", "scored_at", "flags", "auto_approve_at"])
        if undecided:
            if FLAG_GOLD_FAILED in flags and campaign.gold_fail_action == GoldFailAction.REJECT:
                assignment_reject(
                    assignment=assignment,
                    reason=f"Automatic: {total - correct} of {total} check questions answered wrong.",
                )
            elif not flags and campaign.auto_approve_hours <= 0:
                assignment_approve(assignment=assignment, reason="Automatic: all check questions right.")
        assignment.refresh_from_db()
        return assignment


def _verdict(answer_choice: str, answer_score, scale: str) -> bool | None:
    if scale == Scale.SIMILARITY:
        return None if answer_score is None else answer_score >= 3.0
    return None if not answer_choice else answer_choice in ("yes", "partially_yes")


def assignment_peer_agreement(*, assignment: Assignment) -> tuple[int, int]:
    """(agreeing, compared): the assignment's candidate verdicts against the majority of the other
    workers' clean answers to the same pairs in the campaign. A read; no locks."""
    campaign = assignment.hit.campaign
    pair_of_item = dict(
        HitItem.objects.filter(hit_id=assignment.hit_id, role=ItemRole.CANDIDATE).values_list("pk", "pair_id")
    )
    own = {}
    for item_id, choice, score in Answer.objects.filter(
        assignment=assignment, item_id__in=list(pair_of_item)
    ).values_list("item_id", "choice", "score"):
        verdict = _verdict(choice, score, campaign.scale)
        if verdict is not None:
            own[pair_of_item[item_id]] = verdict
    peers: dict[int, list[bool]] = {}
    # Peers are answers that passed the checks themselves: approved, or scored and unflagged. A flagged
    # assignment must not vouch for, or accuse, anyone.
    clean = Q(assignment__status=AssignmentStatus.APPROVED) | Q(
        assignment__status=AssignmentStatus.SUBMITTED, assignment__scored_at__isnull=False, assignment__flags=[]
    )
    rows = (
        Answer.objects.filter(clean, item__pair_id__in=list(own), assignment__hit__campaign=campaign)
        .exclude(assignment_id=assignment.pk)
        .values_list("item__pair_id", "choice", "score")
    )
    for pair_id, choice, score in rows:
        verdict = _verdict(choice, score, campaign.scale)
        if verdict is not None:
            peers.setdefault(pair_id, []).append(verdict)
    return peer_agreement(own=own, peers=peers)


def _peer_flags(assignment: Assignment) -> tuple[list[str], int]:
    """Flags from the other workers' answers, checked when an assignment is due for auto-approval.

    - disagrees_with_peers: the candidate verdicts agree with the peers' majority on fewer than
      QUALITY_PEER_AGREEMENT_MIN of at least QUALITY_PEER_MIN_ITEMS compared pairs (a random clicker
      agrees on about half; a careful worker on nine in ten);
    - gold_failed: a tolerated gold miss that neither the worker's record (trusted) nor the peers
      (agreement of at least QUALITY_PEER_AGREEMENT_EXCUSE) vouch for.
    Returns the flags and how many pairs could be compared.
    """
    min_items = getattr(settings, "QUALITY_PEER_MIN_ITEMS", 8)
    agreeing, compared = assignment_peer_agreement(assignment=assignment)
    share = agreeing / compared if compared else None
    flags = []
    if compared >= min_items and share < getattr(settings, "QUALITY_PEER_AGREEMENT_MIN", 0.7):
        flags.append(FLAG_PEER_DISAGREEMENT)
    missed = (assignment.gold_total or 0) - (assignment.gold_correct or 0)
    if missed > 0:
        vouched = compared >= min_items and share >= getattr(settings, "QUALITY_PEER_AGREEMENT_EXCUSE", 0.8)
        if not vouched and not is_trusted(worker_trust(worker=assignment.worker), trust_policy()):
            flags.append(FLAG_GOLD_FAILED)
    return flags, compared


def _wait_for_peers(assignment: Assignment, *, compared: int, now) -> bool:
    """Whether to put the approval off: too few peer answers yet, the HIT still collecting answers, and
    the extra wait (QUALITY_PEER_WAIT_HOURS after the auto-approval time) not over."""
    hit = assignment.hit
    if compared >= getattr(settings, "QUALITY_PEER_MIN_ITEMS", 8) or hit.status != HitStatus.OPEN:
        return False
    if hit.assignments_required <= 1:
        return False  # nobody else is asked to answer this HIT
    hours = max(hit.campaign.auto_approve_hours, 0.0) + getattr(settings, "QUALITY_PEER_WAIT_HOURS", 72.0)
    return now < assignment.submitted_at + timedelta(hours=hours)


def assignments_auto_approve_due(*, now=None, limit: int = 500) -> int:
    """Approve submitted, unflagged assignments whose auto_approve_at has passed.

    Last check before the money goes out (_peer_flags): an assignment that disagrees with the other
    workers' majority, or whose tolerated gold miss nobody vouches for, goes to the review queue (or is
    rejected, for a gold failure when gold_fail_action is "reject") instead. While too few other answers
    are in and its HIT is still collecting them, the approval is put off by an hour at a time, for at
    most QUALITY_PEER_WAIT_HOURS after the auto-approval time. Each assignment is decided
    in its own transaction with its own row lock; one a requester decided meanwhile is skipped.
    Idempotent; returns how many were approved.
    """
    now = now or timezone.now()
    due = list(
        Assignment.objects.filter(
            status=AssignmentStatus.SUBMITTED, auto_approve_at__isnull=False, auto_approve_at__lte=now
        )
        .order_by("auto_approve_at")
        .values_list("pk", flat=True)[:limit]
    )
    approved = 0
    for pk in due:
        with transaction.atomic():
            assignment = (
                Assignment.objects.select_for_update(of=("self",))
                .select_related("hit__campaign", "worker")
                .filter(pk=pk)
                .first()
            )
            if (
                assignment is None
                or assignment.status != AssignmentStatus.SUBMITTED
                or assignment.flags
                or assignment.auto_approve_at is None
                or assignment.auto_approve_at > now
            ):
                continue
            flags, compared = _peer_flags(assignment)
            if not flags and _wait_for_peers(assignment, compared=compared, now=now):
                assignment.auto_approve_at = now + timedelta(hours=1)  # look again when more answers are in
                assignment.save(update_fields=["auto_approve_at"])
                continue
            if flags:
                assignment.flags = [*assignment.flags, *flags]
                assignment.auto_approve_at = None
                assignment.save(update_fields=["flags", "auto_approve_at"])
                if FLAG_GOLD_FAILED in flags and assignment.hit.campaign.gold_fail_action == GoldFailAction.REJECT:
                    missed = assignment.gold_total - assignment.gold_correct
                    assignment_reject(
                        assignment=assignment,
                        reason=f"Automatic: {missed} of {assignment.gold_total} check questions answered wrong.",
                    )
                continue
            assignment_approve(
                assignment=assignment, reason="Automatic: the check questions and the other workers agree."
            )
            approved += 1
    return approved


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


def campaign_quality_policy_update(*, campaign, actor, tolerated_gold_misses: int) -> Campaign:
    """Set the campaign's tolerance for gold misses from trusted workers (0 = any miss goes to review).

    Applies to assignments scored from now on. Locks the Campaign row; idempotent.
    """
    try:
        misses = int(tolerated_gold_misses)
    except (TypeError, ValueError):
        raise ApplicationError("The tolerated gold misses must be a whole number.") from None
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if not 0 <= misses <= locked.gold_positives_per_hit + locked.gold_negatives_per_hit:
            raise ApplicationError("Tolerate at most as many gold misses as a HIT has gold items.")
        if locked.tolerated_gold_misses != misses:
            locked.tolerated_gold_misses = misses
            locked.save(update_fields=["tolerated_gold_misses"])
        return locked
