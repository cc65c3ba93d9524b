"""Reads of a requester's standing with workers (annotator.models.WorkerStanding): what one requester may see
of the workers who did their work, never another requester's decisions or gold record."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from annotator.crowd.models.standing import WorkerStanding


def workers_with_standing(*, workers: QuerySet, requester) -> QuerySet:
    """`workers` annotated with the requester's own record of each: standing_gold_correct, standing_gold_total,
    standing_blocked, standing_soft_blocked, standing_blocked_reason (zero, false or empty when none)."""
    mine = WorkerStanding.objects.filter(worker=OuterRef("pk"), requester=requester)

    def standing(field: str, default):
        return Coalesce(Subquery(mine.values(field)[:1]), Value(default))

    return workers.annotate(
        standing_gold_correct=standing("gold_correct", 0),
        standing_gold_total=standing("gold_total", 0),
        standing_blocked=standing("blocked", False),
        standing_soft_blocked=standing("soft_blocked", False),
        standing_blocked_reason=standing("blocked_reason", ""),
    )
