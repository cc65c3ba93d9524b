"""Filtering, searching and sorting the requester's campaign and dataset lists (from GET parameters).

Every value comes from a fixed list; anything else is a 400 that names what is allowed, never a 500.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from annotator.errors import ApplicationError
from annotator.models import AssignmentStatus, Campaign, CampaignStatus, Dataset, DatasetStatus
from annotator.selectors.campaigns import campaign_list_managed
from annotator.selectors.datasets import dataset_list_visible

PAGE_SIZE = 25
MAX_QUERY_LENGTH = 200

CAMPAIGN_SORTS = {
    "newest": ("-created_at", "-id"),
    "oldest": ("created_at", "id"),
    "name": ("name", "id"),
    "status": ("status", "-created_at"),
    "dataset": ("dataset__name", "-created_at"),
    "hits": ("-hit_count", "-created_at"),
}
DATASET_SORTS = {
    "name": ("name",),
    "updated": ("-updated_at", "name"),
    "status": ("status", "name"),
    "images": ("-image_count", "name"),
}


@dataclass(frozen=True)
class ListFilter:
    """What the person asked for: a search text, a status (or ""), a sort key."""

    q: str
    status: str
    sort: str


def _read(params, *, statuses, sorts: dict, default_sort: str) -> ListFilter:
    q = (params.get("q") or "").strip()
    status = (params.get("status") or "").strip()
    sort = (params.get("sort") or "").strip() or default_sort
    if len(q) > MAX_QUERY_LENGTH:
        raise ApplicationError(f"Search for at most {MAX_QUERY_LENGTH} characters.")
    if status and status not in statuses:
        raise ApplicationError(f"Unknown status {status!r}; one of: {', '.join(statuses)}.")
    if sort not in sorts:
        raise ApplicationError(f"Unknown sort {sort!r}; one of: {', '.join(sorts)}.")
    return ListFilter(q=q, status=status, sort=sort)


def campaign_filter_read(*, params) -> ListFilter:
    return _read(params, statuses=CampaignStatus.values, sorts=CAMPAIGN_SORTS, default_sort="newest")


def dataset_filter_read(*, params) -> ListFilter:
    return _read(params, statuses=DatasetStatus.values, sorts=DATASET_SORTS, default_sort="name")


def campaign_list_filtered(*, user, wanted: ListFilter) -> QuerySet[Campaign]:
    """The campaigns `user` manages whose name or dataset name contains `wanted.q`, in `wanted.status`."""
    campaigns = campaign_list_managed(user=user)
    if wanted.q:
        campaigns = campaigns.filter(Q(name__icontains=wanted.q) | Q(dataset__name__icontains=wanted.q))
    if wanted.status:
        campaigns = campaigns.filter(status=wanted.status)
    return campaigns.order_by(*CAMPAIGN_SORTS[wanted.sort])


def dataset_list_filtered(*, user, wanted: ListFilter) -> QuerySet[Dataset]:
    """The datasets `user` may see whose name contains `wanted.q`, in `wanted.status`."""
    datasets = dataset_list_visible(user=user)
    if wanted.q:
        datasets = datasets.filter(name__icontains=wanted.q)
    if wanted.status:
        datasets = datasets.filter(status=wanted.status)
    return datasets.order_by(*DATASET_SORTS[wanted.sort])


def campaign_list_for_review(*, user) -> QuerySet[Campaign]:
    """The campaigns `user` manages that have had work, each with how many submissions await a decision;
    those with the most waiting first."""
    waiting = Count("hits__assignments", filter=Q(hits__assignments__status=AssignmentStatus.SUBMITTED), distinct=True)
    return (
        campaign_list_managed(user=user)
        .filter(status__in=[CampaignStatus.LIVE, CampaignStatus.PAUSED, CampaignStatus.FINISHED])
        .annotate(waiting=waiting)
        .order_by("-waiting", "-created_at", "-id")
    )
