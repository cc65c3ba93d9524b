"""Filtering, searching and sorting the requester's campaign list (from GET parameters,
annotator.core.selectors.listing.list_filter_read)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.campaigns.models.campaign import Campaign, CampaignStatus
from annotator.campaigns.selectors.campaigns import campaign_list_managed
from annotator.core.selectors.listing import ListFilter, list_filter_read

CAMPAIGN_SORTS = {
    "newest": ("-created_at", "-id"),
    "oldest": ("created_at", "id"),
    "name": ("name", "id"),
    "status": ("status", "-created_at"),
    "dataset": ("dataset__name", "-created_at"),
    "hits": ("-hit_count", "-created_at"),
}


def campaign_filter_read(*, params) -> ListFilter:
    return list_filter_read(params, statuses=CampaignStatus.values, sorts=CAMPAIGN_SORTS, default_sort="newest")


def campaign_list_filtered(*, user, wanted: ListFilter) -> QuerySet[Campaign]:
    """The campaigns `user` manages whose name or dataset name contains `wanted.q`, in `wanted.status`."""
    campaigns = campaign_list_managed(user=user)
    if wanted.q:
        campaigns = campaigns.filter(Q(name__icontains=wanted.q) | Q(dataset__name__icontains=wanted.q))
    if wanted.status:
        campaigns = campaigns.filter(status=wanted.status)
    return campaigns.order_by(*CAMPAIGN_SORTS[wanted.sort])
