"""A worker's own money: their bonuses and the messages requesters sent them."""

from __future__ import annotations

from django.db.models import Sum

from annotator.crowd.models.money import Bonus, PayoutStatus, WorkerMessage


def worker_bonuses_and_messages(*, worker, limit: int = 20) -> dict:
    """A worker's own bonuses (but those MTurk refused) and the messages requesters sent them, newest first,
    with the bonuses' total in cents. Only this worker's rows; read-only."""
    bonuses = Bonus.objects.filter(worker=worker).exclude(status=PayoutStatus.FAILED)
    return {
        "bonuses": list(bonuses.select_related("campaign", "assignment__hit")[:limit]),
        "bonus_total_cents": bonuses.aggregate(s=Sum("amount_cents"))["s"] or 0,
        "messages": list(WorkerMessage.objects.filter(worker=worker).select_related("campaign")[:limit]),
    }
