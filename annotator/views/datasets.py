"""The requester's dataset pages: the list with import progress, and a dataset's thumbnails and captions."""

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from annotator.errors import ApplicationError
from annotator.models import Role
from annotator.selectors.datasets import (
    dataset_get_visible,
    dataset_images_with_captions,
    dataset_list_visible,
    dataset_progress,
)
from annotator.views.access import role_required

IMAGES_PER_PAGE = 24


@role_required(Role.REQUESTER)
@require_GET
def dataset_list(request):
    datasets = [(dataset, dataset_progress(dataset=dataset)) for dataset in dataset_list_visible(user=request.user)]
    importing = any(dataset.status == "importing" for dataset, _progress in datasets)
    return render(request, "datasets/list.html", {"datasets": datasets, "importing": importing})


@role_required(Role.REQUESTER)
@require_GET
def dataset_detail(request, dataset_id: int):
    try:
        dataset = dataset_get_visible(user=request.user, dataset_id=dataset_id)
    except ApplicationError:
        raise Http404("No such dataset.") from None
    page = Paginator(dataset_images_with_captions(dataset=dataset), IMAGES_PER_PAGE).get_page(request.GET.get("page"))
    report = dataset.report or {}
    return render(request, "datasets/detail.html", {
        "dataset": dataset,
        "progress": dataset_progress(dataset=dataset),
        "page": page,
        "report": report,
        "errors": report.get("errors", [])[:200],
        "duplicates": report.get("duplicates", [])[:50],
    })


urlpatterns = [
    path("datasets/", dataset_list, name="dataset-list"),
    path("datasets/<int:dataset_id>/", dataset_detail, name="dataset-detail"),
]
