"""The requester's dataset pages: the list with import progress and an upload form, and a dataset's
thumbnails and captions."""

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_stalled, job_view
from annotator.core.models.accounts import Role
from annotator.core.selectors.listing import PAGE_SIZE
from annotator.core.views.access import role_required
from annotator.datasets.models.dataset import DatasetStatus
from annotator.datasets.selectors.datasets import (
    dataset_get_visible,
    dataset_images_with_captions,
    dataset_progress,
)
from annotator.datasets.selectors.listing import DATASET_SORTS, dataset_filter_read, dataset_list_filtered
from annotator.datasets.services.uploads import dataset_import_retry, dataset_upload

IMAGES_PER_PAGE = 24
# The request only stores the upload; a Celery task imports it. MS-COCO-sized sets still go by the command.
MAX_UPLOAD_BYTES = 512 * 1024 * 1024


class DatasetImportForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="A new name, or an existing dataset of yours to add to.")
    captions = forms.FileField(label="Captions file", help_text="COCO caption JSON (.json), .jsonl or .csv")
    images = forms.FileField(label="Images (.zip)", help_text="A zip of the image files the captions name")
    split_file = forms.FileField(label="Karpathy split file (optional)", required=False)
    split = forms.CharField(
        label="Split(s) to keep (optional)", required=False, max_length=100, help_text="e.g. test, or train,restval"
    )

    def clean(self):
        data = super().clean()
        total = sum(f.size for f in (data.get("captions"), data.get("images"), data.get("split_file")) if f)
        if total > MAX_UPLOAD_BYTES:
            raise forms.ValidationError("Uploads over 512 MB are refused here: use manage.py import_dataset.")
        return data


def _list_context(request, form=None, import_errors=None) -> dict:
    wanted = dataset_filter_read(params=request.GET)
    page = Paginator(dataset_list_filtered(user=request.user, wanted=wanted), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    datasets = [(dataset, dataset_progress(dataset=dataset)) for dataset in page.object_list]
    return {
        "datasets": datasets,
        "page": page,
        "wanted": wanted,
        "statuses": DatasetStatus.choices,
        "sorts": DATASET_SORTS,
        "importing": any(dataset.status == "importing" for dataset, _progress in datasets),
        "form": form or DatasetImportForm(),
        "import_errors": import_errors,
    }


@role_required(Role.REQUESTER)
@require_GET
def dataset_list(request):
    return render(request, "datasets/list.html", _list_context(request))


@role_required(Role.REQUESTER)
@require_POST
def dataset_upload_submit(request):
    """Store the uploaded files and queue their import, then show the dataset's page, which follows the
    import and lists every offender if it is refused. What is wrong with the request itself (a missing
    file, a wrong suffix, not a zip, another requester's dataset) is answered here (4xx)."""
    form = DatasetImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "datasets/list.html", _list_context(request, form=form), status=400)
    data = form.cleaned_data
    try:
        dataset = dataset_upload(
            name=data["name"],
            captions=data["captions"],
            images=data["images"],
            split_file=data["split_file"],
            split=data["split"] or None,
            owner=request.user,
        )
    except ApplicationError as error:
        context = _list_context(request, form=form, import_errors={"message": error.message, **error.extra})
        return render(request, "datasets/list.html", context, status=error.status)
    _import_message(request, dataset)
    return redirect("dataset-detail", dataset_id=dataset.pk)


def _import_message(request, dataset) -> None:
    report = dataset.report or {}
    if dataset.status == "importing":
        messages.info(request, f"{dataset.name} is importing; this page follows it.")
    elif report.get("phase") == "done":  # Celery ran it at once (the embedded default)
        messages.success(
            request,
            f"Imported {report['images_created']} images and {report['captions_created']} "
            f"captions into {dataset.name}.",
        )


@role_required(Role.REQUESTER)
@require_POST
def dataset_retry(request, dataset_id: int):
    """Queue a failed or stalled import of the stored upload again (dataset_import_retry)."""
    dataset = dataset_get_visible(user=request.user, dataset_id=dataset_id)
    try:
        dataset = dataset_import_retry(dataset=dataset)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        _import_message(request, dataset)
    return redirect("dataset-detail", dataset_id=dataset.pk)


@role_required(Role.REQUESTER)
@require_GET
def dataset_detail(request, dataset_id: int):
    dataset = dataset_get_visible(user=request.user, dataset_id=dataset_id)
    page = Paginator(dataset_images_with_captions(dataset=dataset), IMAGES_PER_PAGE).get_page(request.GET.get("page"))
    report = dataset.report or {}
    return render(
        request,
        "datasets/detail.html",
        {
            "dataset": dataset,
            "progress": dataset_progress(dataset=dataset),
            "page": page,
            "report": report,
            "stalled": job_stalled(dataset),
            "job": job_view(dataset),
            "errors": report.get("errors", [])[:200],
            "duplicates": report.get("duplicates", [])[:50],
        },
    )


urlpatterns = [
    path("datasets/", dataset_list, name="dataset-list"),
    path("datasets/import/", dataset_upload_submit, name="dataset-import"),
    path("datasets/<int:dataset_id>/", dataset_detail, name="dataset-detail"),
    path("datasets/<int:dataset_id>/retry/", dataset_retry, name="dataset-import-retry"),
]
