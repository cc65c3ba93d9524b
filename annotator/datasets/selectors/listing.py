"""Filtering, searching and sorting the requester's dataset list (from GET parameters,
annotator.core.selectors.listing.list_filter_read)."""

from __future__ import annotations

from django.db.models import QuerySet

from annotator.core.selectors.listing import ListFilter, list_filter_read
from annotator.datasets.models.dataset import Dataset, DatasetStatus
from annotator.datasets.selectors.datasets import dataset_list_visible

DATASET_SORTS = {
    "name": ("name",),
    "updated": ("-updated_at", "name"),
    "status": ("status", "name"),
    "images": ("-image_count", "name"),
}


def dataset_filter_read(*, params) -> ListFilter:
    return list_filter_read(params, statuses=DatasetStatus.values, sorts=DATASET_SORTS, default_sort="name")


def dataset_list_filtered(*, user, wanted: ListFilter) -> QuerySet[Dataset]:
    """The datasets `user` may see whose name contains `wanted.q`, in `wanted.status`."""
    datasets = dataset_list_visible(user=user)
    if wanted.q:
        datasets = datasets.filter(name__icontains=wanted.q)
    if wanted.status:
        datasets = datasets.filter(status=wanted.status)
    return datasets.order_by(*DATASET_SORTS[wanted.sort])
