"""Sharing a campaign's labels and metrics with researchers (Campaign.shared_with)."""

from django.contrib.auth import get_user_model
from django.db import transaction

from annotator.campaigns.models.campaign import Campaign
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role

MAX_SHARES = 100


def campaign_share(*, campaign: Campaign, usernames: list[str]) -> Campaign:
    """Set the researchers a campaign is shared with to exactly `usernames` (an empty list unshares all).

    Only researcher accounts can be named. Locks the Campaign row (SELECT ... FOR UPDATE) so two concurrent
    edits do not interleave; idempotent: the same list twice leaves the same sharing.
    """
    names = sorted({(name or "").strip() for name in usernames} - {""})
    if len(names) > MAX_SHARES:
        raise ApplicationError(f"Share with at most {MAX_SHARES} researchers at a time.")
    users = list(get_user_model().objects.filter(username__in=names, profile__role=Role.RESEARCHER))
    unknown = sorted(set(names) - {user.username for user in users})
    if unknown:
        raise ApplicationError("Only researcher accounts can be shared with.", extra={"unknown": unknown})
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        locked.shared_with.set(users)
    return locked
