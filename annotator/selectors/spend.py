"""What a campaign has spent so far, in cents: approved work (paid), pending work (submitted, not yet
decided), bonuses (but those MTurk refused), and the platform fee on them all; with the budget, when the
campaign has one."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet, Sum

from annotator.models import Assignment, AssignmentStatus, Bonus, Campaign, PayoutStatus


def _with_fee(*, campaign: Campaign, cents: int) -> int:
    return round(cents * (1 + campaign.platform_fee_percent / 100.0))


def campaign_spend(*, campaign: Campaign) -> dict:
    """Approved and pending rewards, their platform fees, the total, and the budget left (None: no cap).

    `budget_reached` is True when one more assignment's reward and fee would pass the budget: the point at
    which the campaign pauses (annotator.services.campaigns.budget). Read-only; no locks.
    """
    counts = Assignment.objects.filter(hit__campaign=campaign).aggregate(
        approved=Count("pk", filter=Q(status=AssignmentStatus.APPROVED)),
        pending=Count("pk", filter=Q(status=AssignmentStatus.SUBMITTED)),
    )
    approved = counts["approved"] * campaign.reward_cents
    pending = counts["pending"] * campaign.reward_cents
    bonuses = (
        Bonus.objects.filter(campaign=campaign)
        .exclude(status=PayoutStatus.FAILED)
        .aggregate(s=Sum("amount_cents"))["s"]
        or 0
    )
    before_fees = approved + pending + bonuses
    fees = _with_fee(campaign=campaign, cents=before_fees) - before_fees
    total = before_fees + fees
    budget = campaign.budget_cents
    next_assignment = _with_fee(campaign=campaign, cents=campaign.reward_cents)
    return {
        "approved_assignments": counts["approved"],
        "pending_assignments": counts["pending"],
        "approved_cents": approved,
        "pending_cents": pending,
        "bonuses_cents": bonuses,
        "fees_cents": fees,
        "total_cents": total,
        "budget_cents": budget,
        "budget_left_cents": None if budget is None else budget - total,
        "budget_reached": budget is not None and total + next_assignment > budget,
    }


def bonuses_failed(*, campaigns) -> QuerySet[Bonus]:
    """The bonuses MTurk did not accept in `campaigns` (a queryset the caller scoped to the person, e.g.
    annotator.access.campaigns_managed_by), newest first, with their worker, assignment and campaign."""
    return (
        Bonus.objects.filter(campaign__in=campaigns, status=PayoutStatus.FAILED)
        .select_related("campaign", "worker", "assignment")
        .order_by("-created_at", "-id")
    )


def worker_bonuses_and_messages(*, worker, limit: int = 20) -> dict:
    """A worker's own bonuses (but those MTurk refused) and the messages requesters sent them, newest first,
    with the bonuses' total in cents. Only this worker's rows; read-only."""
    from annotator.models import WorkerMessage

    bonuses = Bonus.objects.filter(worker=worker).exclude(status=PayoutStatus.FAILED)
    return {
        "bonuses": list(bonuses.select_related("campaign", "assignment__hit")[:limit]),
        "bonus_total_cents": bonuses.aggregate(s=Sum("amount_cents"))["s"] or 0,
        "messages": list(WorkerMessage.objects.filter(worker=worker).select_related("campaign")[:limit]),
    }
