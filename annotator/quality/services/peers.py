"""The last check before auto-approval: the other workers' answers to the same pairs."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotator.analysis.gold import peer_agreement
from annotator.campaigns.models.campaign import (
    CampaignStatus,
    GoldFailAction,
    HitItem,
    HitStatus,
    ItemRole,
)
from annotator.core.services.webhooks.delivery import webhook_emit
from annotator.crowd.models.crowd import (
    FLAG_COLLUSION,
    FLAG_GOLD_FAILED,
    FLAG_PEER_DISAGREEMENT,
    Answer,
    Assignment,
    AssignmentStatus,
)
from annotator.crowd.scales import answer_verdict
from annotator.quality.services.crowd_check import CrowdCheck, assignment_crowd_flags
from annotator.quality.services.decisions import assignment_approve, assignment_reject


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
        verdict = answer_verdict(campaign=campaign, choice=choice, score=score)
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
        verdict = answer_verdict(campaign=campaign, choice=choice, score=score)
        if verdict is not None:
            peers.setdefault(pair_id, []).append(verdict)
    return peer_agreement(own=own, peers=peers)


def _may_wait(assignment: Assignment, *, now, check: CrowdCheck) -> bool:
    """Whether the approval may still be put off for more answers: the pairs still collecting answers (an
    open HIT asking for more than one, or, in a live campaign with adaptive redundancy, an unsettled pair
    that follow-up HITs will ask again), and the extra wait (QUALITY_PEER_WAIT_HOURS after the auto-approval
    time) not over. A finished campaign, settled pairs or the end of the wait end it: nothing waits forever."""
    hit = assignment.hit
    campaign = hit.campaign
    collecting = (hit.status == HitStatus.OPEN and hit.assignments_required > 1) or (
        campaign.adaptive_redundancy and campaign.status == CampaignStatus.LIVE and check.collecting(assignment)
    )
    if not collecting:
        return False
    hours = max(campaign.auto_approve_hours, 0.0) + getattr(settings, "QUALITY_PEER_WAIT_HOURS", 72.0)
    return now < assignment.submitted_at + timedelta(hours=hours)


def assignments_auto_approve_due(*, now=None, limit: int = 500) -> int:
    """Approve submitted, unflagged assignments whose auto_approve_at has passed.

    Last check before the money goes out (annotator.quality.services.crowd_check): an assignment whose worker the
    crowd's posterior finds careless, who is in a collusion group, or whose tolerated gold miss nobody vouches for, goes
    to the review queue (or is
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
    check = CrowdCheck()  # one posterior fit per campaign for this pass
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
            may_wait = _may_wait(assignment, now=now, check=check)
            # While more answers are coming, judge on the settled pairs only (they may condemn, not clear).
            flags, enough = assignment_crowd_flags(assignment=assignment, check=check, settled_only=may_wait)
            # Too little evidence yet: wait for it, also when a tolerated gold miss is all that stands out.
            condemned = FLAG_PEER_DISAGREEMENT in flags or FLAG_COLLUSION in flags
            if not condemned and not enough and may_wait:
                assignment.auto_approve_at = now + timedelta(hours=1)  # look again when more answers are in
                assignment.save(update_fields=["auto_approve_at"])
                continue
            if flags:
                assignment.flags = [*assignment.flags, *flags]
                assignment.auto_approve_at = None
                assignment.save(update_fields=["flags", "auto_approve_at"])
                campaign = assignment.hit.campaign
                webhook_emit(
                    owner=campaign.owner,
                    event="assignment.flagged",
                    data={"assignment": assignment.pk, "campaign": campaign.pk, "flags": list(assignment.flags)},
                )
                if FLAG_GOLD_FAILED in flags and assignment.hit.campaign.gold_fail_action == GoldFailAction.REJECT:
                    assignment_reject(
                        assignment=assignment,
                        # The worker reads this reason: it never says how many check questions the HIT held
                        # (adaptive gold makes that number tell a gold-light HIT).
                        reason="Automatic: check questions answered wrong.",
                    )
                continue
            assignment_approve(
                assignment=assignment, reason="Automatic: the check questions and the other workers agree."
            )
            approved += 1
    return approved
