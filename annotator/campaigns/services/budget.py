"""The budget cap: a live campaign whose approved and pending work would pass its budget pauses."""

from __future__ import annotations

from annotator.campaigns.models.campaign import Campaign, CampaignStatus
from annotator.campaigns.selectors.crowd_work import campaign_spend
from annotator.campaigns.services.lifecycle import campaign_pause


def campaign_budget_enforce(*, campaign_id: int) -> bool:
    """Pause the campaign (through campaign_pause, so the state machine decides) when one more
    assignment would pass its budget; claims stop because only live campaigns hand out HITs.

    Called after a submission and after an approval. Returns True when it paused the campaign. Leases
    already taken can still be submitted, so the spend can pass the budget by at most those. Idempotent;
    locks the Campaign row only when it pauses.
    """
    campaign = Campaign.objects.get(pk=campaign_id)
    if campaign.status != CampaignStatus.LIVE or campaign.budget_cents is None:
        return False
    if not campaign_spend(campaign=campaign)["budget_reached"]:
        return False
    return campaign_pause(campaign=campaign).status == CampaignStatus.PAUSED
