"""What a worker is told about decisions on their own work and about the pay of a campaign.

Only the worker's own record comes out of here: the reason a requester gave for rejecting *their*
assignment (the review form says the worker sees it), the platform's reason for blocking *them*, and that
this campaign's owner does not offer them work. Another requester's decisions never reach a worker; their
campaigns are simply not offered.
"""

from __future__ import annotations

from statistics import median

from django.conf import settings

from annotator.campaigns.models.campaign import Campaign
from annotator.crowd.models.crowd import Answer, Assignment, AssignmentEvent, AssignmentStatus, Worker
from annotator.crowd.models.standing import WorkerStanding

# Shown under every rejection: what a worker can do about one.
REJECTION_ADVICE = (
    "A rejected HIT is not paid and counts against your approval rate. Read the instructions again before "
    "your next HIT. If you think the decision is wrong, tell the requester (on Mechanical Turk, with "
    '"Contact this requester" on the HIT): a requester can overturn a rejection, and it then counts as approved.'
)
# How many recent answers of approved work the pay estimate reads: enough for a stable median.
ESTIMATE_SAMPLE = 2000


def assignment_rejection_reasons(*, assignment_ids: list[int]) -> dict[int, str]:
    """assignment id -> the reason of its latest rejection (one query). Call only with the worker's own ids."""
    reasons: dict[int, str] = {}
    events = AssignmentEvent.objects.filter(
        assignment_id__in=assignment_ids, to_status=AssignmentStatus.REJECTED
    ).order_by("created_at", "id")
    for assignment_id, reason in events.values_list("assignment_id", "reason"):
        reasons[assignment_id] = reason  # the latest wins
    return reasons


def assignment_rejection(*, assignment: Assignment) -> dict | None:
    """The reason and the advice for a rejected assignment of the worker; None when it is not rejected."""
    if assignment.status != AssignmentStatus.REJECTED:
        return None
    reason = assignment_rejection_reasons(assignment_ids=[assignment.pk]).get(assignment.pk, "")
    return {"reason": reason or "The requester gave no reason.", "advice": REJECTION_ADVICE}


def worker_block_notice(*, worker: Worker, campaign: Campaign) -> dict | None:
    """Why this worker may not take HITs on this campaign, or None when nothing stops them.

    kind: "platform" (a block by staff), "requester" (the campaign owner's block) or "paused" (the owner's
    automatic soft block). `reason` is what the worker may read: the platform's reason for their block, a
    plain account of a soft block; a requester's own block note stays with the requester.
    """
    if worker.blocked:
        return {
            "kind": "platform",
            "message": "Your account may not take new HITs on this platform.",
            "reason": worker.blocked_reason,
            "advice": "If you think this is a mistake, write to the platform's support.",
        }
    standing = (
        WorkerStanding.objects.filter(worker=worker, requester_id=campaign.owner_id)
        .only("blocked", "blocked_reason", "soft_blocked", "soft_block_reason")
        .first()
    )
    if standing is None:
        return None
    # A requester's block reason is their own note (as on MTurk, the worker does not see it); the worker
    # learns that this requester does not offer them work, and that nobody else's campaigns are affected.
    if standing.blocked:
        return {
            "kind": "requester",
            "message": "This requester does not offer you work: your account may not take new HITs on their campaigns.",
            "reason": "",
            "advice": "Other requesters' campaigns are not affected.",
        }
    if standing.soft_blocked:
        return {
            "kind": "paused",
            "message": "This requester does not offer you work for now: your account may not take new HITs on "
            "their campaigns while your recent work is reviewed.",
            "reason": "Too many of your answers on their check items (items with a known answer) were wrong.",
            "advice": "Approvals of your submitted work can lift this. Other requesters' campaigns are not affected.",
        }
    return None


def campaign_pay_estimate(*, campaign: Campaign) -> dict:
    """Minutes a HIT takes and the hourly pay it works out to, before a worker starts.

    From the median seconds per item of the campaign's approved work (its latest ESTIMATE_SAMPLE answers),
    or settings.CAMPAIGN_SECONDS_PER_ITEM before anything is approved. `measured` says which.
    """
    seconds = list(
        Answer.objects.filter(assignment__hit__campaign=campaign, assignment__status=AssignmentStatus.APPROVED)
        .order_by("-assignment__decided_at", "-id")
        .values_list("seconds_spent", flat=True)[:ESTIMATE_SAMPLE]
    )
    measured = bool(seconds)
    per_item = median(seconds) if measured else float(getattr(settings, "CAMPAIGN_SECONDS_PER_ITEM", 20.0))
    per_hit_seconds = max(per_item * campaign.hit_size, 1.0)
    minutes = per_hit_seconds / 60.0
    return {
        "measured": measured,
        "seconds_per_item": round(per_item, 1),
        "minutes": max(1, round(minutes)),
        "hourly_cents": round(campaign.reward_cents * 3600.0 / per_hit_seconds),
        "hourly": f"${campaign.reward_cents * 36.0 / per_hit_seconds:,.2f}",
    }
