"""Copying a campaign: the same options and ranking runs as a new draft."""

from annotator.campaigns.models.campaign import Campaign
from annotator.campaigns.services.lifecycle import campaign_create
from annotator.campaigns.services.options import OPTION_FIELDS

COPY_SUFFIX = " (copy)"


def campaign_clone(*, campaign: Campaign, owner) -> Campaign:
    """A new draft with `campaign`'s options and runs, named "<name> (copy)"; nothing built is copied.

    Goes through campaign_create, so the copy is validated like a new campaign (a run that no longer
    succeeded refuses the copy with a 400). Not idempotent: each call makes another draft. No locks.
    """
    options = {name: getattr(campaign, name) for name in OPTION_FIELDS}
    limit = Campaign._meta.get_field("name").max_length
    options["name"] = campaign.name[: limit - len(COPY_SUFFIX)] + COPY_SUFFIX
    return campaign_create(owner=owner, dataset=campaign.dataset, runs=list(campaign.runs.all()), **options)
