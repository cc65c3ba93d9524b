"""Gold scoring of a submitted assignment and the decision policy that follows from it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotator.analysis.gold import same_answer_throughout, too_fast
from annotator.analysis.trust import is_trusted
from annotator.campaigns.models.campaign import GoldFailAction, HitItem, Scale
from annotator.core.services.webhooks.delivery import webhook_emit
from annotator.crowd.models.crowd import (
    FLAG_GOLD_FAILED,
    FLAG_LOW_TRUST,
    FLAG_SAME_ANSWER,
    FLAG_TOO_FAST,
    Answer,
    Assignment,
    AssignmentStatus,
    Worker,
)
from annotator.quality.selectors.gold import GOLD_ROLES, gold_answer_right, gold_pairs_disputed
from annotator.quality.services.decisions import assignment_approve, assignment_reject
from annotator.quality.services.trust import (
    trust_policy,
    worker_standing_gold_add,
    worker_trust,
    worker_trust_refresh,
)


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
        correct += int(gold_answer_right(role=item.role, answer=answers.get(item.id), campaign=campaign))
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

    Locks the Assignment row (SELECT ... FOR UPDATE), then the campaign owner's WorkerStanding row.
    Idempotent: `scored_at` is set in the same transaction, so a second call (a redelivered task after a
    worker was killed) finds it and changes nothing; the worker's gold counters (the platform tally and
    the owner's standing) move exactly once. Returns None when there is
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
            record = worker_trust(worker=Worker.objects.get(pk=assignment.worker_id), requester_id=campaign.owner_id)
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
        worker_standing_gold_add(
            worker_id=assignment.worker_id, requester_id=campaign.owner_id, correct=correct, total=total
        )
        standing = worker_trust_refresh(worker_id=assignment.worker_id, requester_id=campaign.owner_id)
        if not flags and standing.soft_blocked:
            flags.append(FLAG_LOW_TRUST)
        assignment.flags = flags
        undecided = assignment.status == AssignmentStatus.SUBMITTED  # a requester may have acted already
        if undecided and not flags:
            assignment.auto_approve_at = now + timedelta(hours=max(campaign.auto_approve_hours, 0.0))
        assignment.save(update_fields=["gold_correct", "gold_total", "scored_at", "flags", "auto_approve_at"])
        if flags:
            webhook_emit(
                owner=campaign.owner,
                event="assignment.flagged",
                data={"assignment": assignment.pk, "campaign": campaign.pk, "flags": list(assignment.flags)},
            )
        if undecided:
            if FLAG_GOLD_FAILED in flags and campaign.gold_fail_action == GoldFailAction.REJECT:
                assignment_reject(
                    assignment=assignment,
                    # The worker reads this reason: it never says how many check questions the HIT held (adaptive
                    # gold makes that number tell a gold-light HIT).
                    reason="Automatic: check questions answered wrong.",
                )
            elif not flags and campaign.auto_approve_hours <= 0:
                assignment_approve(assignment=assignment, reason="Automatic: all check questions right.")
        assignment.refresh_from_db()
        return assignment
