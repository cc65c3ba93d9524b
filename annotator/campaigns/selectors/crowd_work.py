"""The crowd's work on a campaign, counted: the one module of the campaigns step that reads the crowd step's
tables (assignments and bonuses). A campaign's progress, its spend against the budget, its failed bonuses and
who leased which HIT are counted in those rows, and the campaign's own page, its lifecycle (resume refuses a spent
budget), its budget guard and its gold exposure need them. The pipeline contract (pyproject.toml) allows exactly
this module's two imports of crowd models; no other module of an earlier step imports a later one.

Spend, in cents: approved work (paid), pending work (submitted, not yet decided), bonuses (but those MTurk refused),
and the platform fee on them all; with the budget, when the campaign has one."""

from __future__ import annotations

from django.db.models import Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from annotator.campaigns.models.campaign import Campaign, Hit, HitStatus
from annotator.crowd.models.crowd import Assignment, AssignmentStatus
from annotator.crowd.models.money import Bonus, PayoutStatus


def _with_fee(*, campaign: Campaign, cents: int) -> int:
    return round(cents * (1 + campaign.platform_fee_percent / 100.0))


def campaign_spend(*, campaign: Campaign) -> dict:
    """Approved and pending rewards, their platform fees, the total, and the budget left (None: no cap).

    `budget_reached` is True when one more assignment's reward and fee would pass the budget: the point at
    which the campaign pauses (annotator.campaigns.services.budget). Read-only; no locks.
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
    annotator.campaigns.selectors.access.campaigns_managed_by), newest first, with their worker, assignment and
    campaign."""
    return (
        Bonus.objects.filter(campaign__in=campaigns, status=PayoutStatus.FAILED)
        .select_related("campaign", "worker", "assignment")
        .order_by("-created_at", "-id")
    )


def campaign_progress(*, campaign: Campaign) -> dict:
    """HITs done (complete: approved) out of the total, HITs submitted (every slot handed in, awaiting
    review), and assignments by status. A HIT counts once: as approved when complete, else as submitted."""
    handed_in = (
        Assignment.objects.filter(
            hit=OuterRef("pk"), status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED]
        )
        .order_by()
        .values("hit_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    hit_counts = (
        Hit.objects.filter(campaign=campaign)
        .alias(handed_in=Coalesce(Subquery(handed_in, output_field=IntegerField()), 0))
        .aggregate(
            total=Count("pk"),
            complete=Count("pk", filter=Q(status=HitStatus.COMPLETE)),
            submitted=Count(
                "pk", filter=Q(status=HitStatus.OPEN, handed_in__gte=F("assignments_required"), handed_in__gt=0)
            ),
        )
    )
    by_status = dict(
        Assignment.objects.filter(hit__campaign=campaign)
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    total = hit_counts["total"] or 0
    return {
        "hits_total": total,
        "hits_done": hit_counts["complete"] or 0,
        "hits_approved": hit_counts["complete"] or 0,
        "hits_submitted": hit_counts["submitted"] or 0,
        "percent": round(100.0 * (hit_counts["complete"] or 0) / total, 1) if total else 0.0,
        "assignments": {status: by_status.get(status, 0) for status in AssignmentStatus.values},
    }


def hit_leases(*, hit_ids) -> list[tuple[int, int, int]]:
    """(worker id, hit id, assignment id) of every assignment on those HITs, in any status (a lease shows the
    items), oldest lease first."""
    return list(
        Assignment.objects.filter(hit_id__in=list(hit_ids))
        .order_by("reserved_at", "id")
        .values_list("worker_id", "hit_id", "id")
    )
