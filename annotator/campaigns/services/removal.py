"""Deleting what never went anywhere: a draft campaign (no HITs, no answers, no labels)."""

from django.db import transaction
from django.db.models import ProtectedError

from annotator.campaigns.models.campaign import Campaign, CampaignStatus
from annotator.core.errors import ApplicationError


def campaign_delete(*, campaign: Campaign) -> None:
    """Delete a draft campaign. Anything else (building, built, live, paused, finished) is refused with a 409:
    those hold HITs, workers' answers or labels that are kept.

    Locks the Campaign row (SELECT ... FOR UPDATE) so a build queued at the same moment either sees the
    campaign gone or the delete sees it building. Deleting one already gone raises a 404.
    """
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        if locked is None:
            raise ApplicationError("No such campaign.", status=404)
        if locked.status != CampaignStatus.DRAFT:
            raise ApplicationError(
                f"Only a draft campaign can be deleted; this one is {locked.get_status_display().lower()}. "
                "Finish it instead.",
                status=409,
            )
        try:
            locked.delete()
        except ProtectedError:
            raise ApplicationError("Label sets refer to this campaign; it cannot be deleted.", status=409) from None
