"""Correction HITs (MSCOCO-FG Sec. 3.2.4): a worker accepts a proposed finer caption or corrects it with as
few edits as possible. Gold proposals (known right or wrong) check the worker; a failed gold, and the work of
a worker whose gold record in this refinement is poor, waits for the requester's review. An approved answer
becomes the caption's next version.

Concurrency: a claim locks the worker row, then a proposal row with SELECT ... FOR UPDATE SKIP LOCKED (plain
FOR UPDATE on SQLite, whose single writer serialises it); the partial unique constraint "one active
assignment per non-gold proposal" backs it up. Submit and review lock the assignment row.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from annotator.analysis.refinement import edit_distance, gold_check
from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.crowd.models.crowd import Worker
from annotator.finegrained.models.refinement import (
    CORRECTION_TRANSITIONS,
    CorrectionAction,
    CorrectionAssignment,
    CorrectionStatus,
    ProposalStatus,
    Refinement,
    RefinementProposal,
    RefinementStatus,
    VersionSource,
)
from annotator.finegrained.selectors.refinement import caption_text_current
from annotator.finegrained.services.refinement.versions import (
    MAX_CAPTION_CHARS,
    caption_version_add,
)

GOLD_SHARE = 5  # after every this many real HITs a worker gets a gold one while there are gold HITs left
TRUSTED_GOLD_ACCURACY = 0.75  # below this, in this refinement, a worker's answers go to review


def _transition(assignment: CorrectionAssignment, target: str) -> None:
    check_transition(
        transitions=CORRECTION_TRANSITIONS, current=assignment.status, target=target, what="correction assignment"
    )
    assignment.status = target


def corrections_expire(*, refinement: Refinement, now=None) -> int:
    """Reserved leases past their expiry become expired (the proposal is free again). Idempotent."""
    now = now or timezone.now()
    return CorrectionAssignment.objects.filter(
        proposal__refinement=refinement, status=CorrectionStatus.RESERVED, expires_at__lt=now
    ).update(status=CorrectionStatus.EXPIRED)


def _gold_record(*, refinement: Refinement, worker: Worker) -> tuple[int, int]:
    rows = CorrectionAssignment.objects.filter(
        proposal__refinement=refinement, worker=worker, is_gold=True, gold_passed__isnull=False
    ).values_list("gold_passed", flat=True)
    rows = list(rows)
    return sum(rows), len(rows)


def _next_proposal(*, refinement: Refinement, worker: Worker, gold: bool):
    seen = CorrectionAssignment.objects.filter(proposal=OuterRef("pk"), worker=worker)
    busy = CorrectionAssignment.objects.filter(
        proposal=OuterRef("pk"),
        status__in=[CorrectionStatus.RESERVED, CorrectionStatus.REVIEW, CorrectionStatus.APPROVED],
    )
    candidates = RefinementProposal.objects.filter(refinement=refinement, status=ProposalStatus.KEPT).exclude(
        Exists(seen)
    )
    candidates = candidates.exclude(gold="") if gold else candidates.filter(gold="").exclude(Exists(busy))
    candidates = candidates.order_by("pk")
    if connection.features.has_select_for_update_skip_locked:
        candidates = candidates.select_for_update(skip_locked=True, of=("self",))
    else:
        candidates = candidates.select_for_update()
    return candidates.first()


def correction_claim(*, refinement: Refinement, worker: Worker, now=None) -> CorrectionAssignment | None:
    """The worker's open correction lease in this refinement, or a new one on the next free proposal; None
    when there is nothing left. Every GOLD_SHARE-th HIT is a gold one (while the worker has unseen gold).

    Locks the worker row (one claim per worker at a time), then one proposal with SKIP LOCKED. Idempotent:
    a worker with an unexpired lease gets that lease back.
    """
    now = now or timezone.now()
    if worker.blocked:
        raise ApplicationError("Your account is blocked from new work.", status=403)
    with transaction.atomic():
        Worker.objects.select_for_update().filter(pk=worker.pk).first()
        refinement = Refinement.objects.get(pk=refinement.pk)
        if refinement.status != RefinementStatus.LIVE:
            raise ApplicationError("This refinement is not taking work.", status=409)
        corrections_expire(refinement=refinement, now=now)
        open_lease = CorrectionAssignment.objects.filter(
            proposal__refinement=refinement, worker=worker, status=CorrectionStatus.RESERVED
        ).first()
        if open_lease is not None:
            return open_lease
        done = CorrectionAssignment.objects.filter(proposal__refinement=refinement, worker=worker).count()
        proposal = None
        if done % GOLD_SHARE == 0:
            proposal = _next_proposal(refinement=refinement, worker=worker, gold=True)
        if proposal is None:
            proposal = _next_proposal(refinement=refinement, worker=worker, gold=False)
        if proposal is None:
            return None
        assignment = CorrectionAssignment(
            proposal=proposal,
            worker=worker,
            is_gold=bool(proposal.gold),
            expires_at=now + timedelta(minutes=refinement.lease_minutes),
        )
        assignment.save()
    return assignment


def _clean_seconds(value) -> float:
    try:
        seconds = float(value or 0)
    except (TypeError, ValueError):
        raise ApplicationError("seconds_spent must be a number.") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ApplicationError("seconds_spent must be a non-negative number.")
    return min(seconds, 24 * 3600.0)


def correction_submit(
    *, assignment: CorrectionAssignment, worker: Worker, text: str, seconds_spent=0, now=None
) -> CorrectionAssignment:
    """Submit a correction: `text` equal to the proposal is an accept, anything else a correction; the edit
    distance (characters) from the proposal is recorded. A gold HIT is scored at once: passed -> approved,
    failed -> review. Other work is approved (and stored as the caption's next version) when the worker's
    gold record here is good, else it waits for review.

    Takes SELECT ... FOR UPDATE on the assignment. Idempotent: submitting a decided assignment again returns
    it unchanged.
    """
    now = now or timezone.now()
    text = " ".join((text or "").split())
    if not text:
        raise ApplicationError("The caption cannot be empty; to keep the proposal, accept it.")
    if len(text) > MAX_CAPTION_CHARS:
        raise ApplicationError(f"A caption may have at most {MAX_CAPTION_CHARS} characters.")
    seconds = _clean_seconds(seconds_spent)
    with transaction.atomic():
        locked = (
            CorrectionAssignment.objects.select_for_update(of=("self",))
            .select_related("proposal", "proposal__refinement", "proposal__caption")
            .filter(pk=assignment.pk, worker=worker)
            .first()
        )
        if locked is None:
            raise ApplicationError("That correction HIT is not yours.", status=404)
        if locked.status != CorrectionStatus.RESERVED:
            if locked.status == CorrectionStatus.EXPIRED:
                raise ApplicationError("This HIT's lease has expired.", status=409)
            return locked
        if locked.expires_at < now:
            _transition(locked, CorrectionStatus.EXPIRED)
            locked.save(update_fields=["status"])
            raise ApplicationError("This HIT's lease has expired.", status=409)
        proposal = locked.proposal
        locked.text = text
        locked.action = CorrectionAction.ACCEPT if text == " ".join(proposal.text.split()) else CorrectionAction.CORRECT
        locked.edit_distance = edit_distance(" ".join(proposal.text.split()), text)
        locked.seconds_spent = seconds
        locked.submitted_at = now
        if proposal.gold:
            locked.gold_passed = gold_check(
                expect=proposal.gold, proposal=proposal.text, submitted=text, wrong_words=proposal.gold_wrong_words
            )
            Worker.objects.filter(pk=worker.pk).update(
                gold_total=F("gold_total") + 1,
                gold_correct=F("gold_correct") + int(locked.gold_passed),
            )
            _transition(locked, CorrectionStatus.APPROVED if locked.gold_passed else CorrectionStatus.REVIEW)
            if not locked.gold_passed:
                locked.reason = "gold failed"
            locked.save()
            return locked
        correct, total = _gold_record(refinement=proposal.refinement, worker=worker)
        if total and correct / total < TRUSTED_GOLD_ACCURACY:
            _transition(locked, CorrectionStatus.REVIEW)
            locked.reason = f"gold record here {correct}/{total}"
            locked.save()
            return locked
        _approve(locked, decided_by=None, now=now)
    return locked


def _approve(assignment: CorrectionAssignment, *, decided_by, now) -> None:
    """Approve under the caller's lock; a non-gold answer becomes the caption's next version."""
    _transition(assignment, CorrectionStatus.APPROVED)
    assignment.decided_by, assignment.decided_at = decided_by, now
    assignment.save()
    proposal = assignment.proposal
    if proposal.gold:
        return
    RefinementProposal.objects.filter(pk=proposal.pk).update(status=ProposalStatus.DONE)
    if assignment.text == caption_text_current(caption=proposal.caption):
        # The worker put the caption back as it was: the proposal was wrong and the caption stays.
        return
    source = VersionSource.PROPOSAL if assignment.action == CorrectionAction.ACCEPT else VersionSource.CORRECTION
    caption_version_add(
        caption=proposal.caption,
        text=assignment.text,
        source=source,
        generator=proposal.generator,
        proposal=proposal,
        worker=assignment.worker,
        approved_by=decided_by,
        edit_distance=assignment.edit_distance,
    )


def correction_decide(*, assignment: CorrectionAssignment, user, approve: bool, reason: str = "", now=None):
    """The requester's review of a correction waiting for it: approve (a non-gold answer becomes a version)
    or reject (the proposal is free for another worker). Takes the assignment's row lock; deciding a decided
    assignment is a 409."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = (
            CorrectionAssignment.objects.select_for_update(of=("self",))
            .select_related("proposal", "proposal__caption", "worker")
            .get(pk=assignment.pk)
        )
        if locked.status != CorrectionStatus.REVIEW:
            raise ApplicationError(f"This correction is {locked.status}, not waiting for review.", status=409)
        if approve:
            _approve(locked, decided_by=user, now=now)
        else:
            _transition(locked, CorrectionStatus.REJECTED)
            locked.decided_by, locked.decided_at, locked.reason = user, now, (reason or "rejected")[:500]
            locked.save()
    return locked


def correction_return(*, assignment: CorrectionAssignment, worker: Worker) -> None:
    """Give a lease back unanswered (it expires now). Idempotent."""
    CorrectionAssignment.objects.filter(Q(pk=assignment.pk, worker=worker, status=CorrectionStatus.RESERVED)).update(
        status=CorrectionStatus.EXPIRED
    )
