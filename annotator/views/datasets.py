"""The requester's dataset pages: the list with import progress and an upload form, and a dataset's
thumbnails and captions."""

import tempfile
from pathlib import Path

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotator.errors import ApplicationError
from annotator.importing.uploads import save_upload
from annotator.models import Role
from annotator.selectors.datasets import (
    dataset_get_visible,
    dataset_images_with_captions,
    dataset_list_visible,
    dataset_progress,
)
from annotator.services.datasets import dataset_import
from annotator.views.access import role_required

IMAGES_PER_PAGE = 24
# The browser form imports while the request waits: meant for small sets; big ones use the command or the API.
MAX_UPLOAD_BYTES = 512 * 1024 * 1024


class DatasetImportForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="A new name, or an existing dataset of yours to add to.")
    captions = forms.FileField(label="Captions file", help_text="COCO caption JSON (.json), .jsonl or .csv")
    images = forms.FileField(label="Images (.zip)", help_text="A zip of the image files the captions name")
    split_file = forms.FileField(label="Karpathy split file (optional)", required=False)
    split = forms.CharField(label="Split(s) to keep (optional)", required=False, max_length=100,
                            help_text="e.g. test, or train,restval")

    def clean(self):
        data = super().clean()
        total = sum(f.size for f in (data.get("captions"), data.get("images"), data.get("split_file")) if f)
        if total > MAX_UPLOAD_BYTES:
            raise forms.ValidationError("Uploads over 512 MB are refused here: use manage.py import_dataset.")
        return data


def _list_context(request, form=None, import_errors=None) -> dict:
    datasets = [(dataset, dataset_progress(dataset=dataset)) for dataset in dataset_list_visible(user=request.user)]
    return {
        "datasets": datasets,
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
def dataset_upload(request):
    """Import uploaded files now (the request waits); a refused import lists every offender (400)."""
    form = DatasetImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "datasets/list.html", _list_context(request, form=form), status=400)
    data = form.cleaned_data
    try:
        with tempfile.TemporaryDirectory(prefix="vericap-upload-") as folder:
            folder = Path(folder)
            captions = save_upload(data["captions"], folder, "captions", (".json", ".jsonl", ".ndjson", ".csv"))
            images = save_upload(data["images"], folder, "images", (".zip",))
            split_file = save_upload(data["split_file"], folder, "split", (".json",)) if data["split_file"] else None
            dataset = dataset_import(name=data["name"], captions_path=captions, images_path=images,
                                     split_path=split_file, split=data["split"] or None, owner=request.user)
    except ApplicationError as error:
        context = _list_context(request, form=form, import_errors={"message": error.message, **error.extra})
        return render(request, "datasets/list.html", context, status=error.status)
    report = dataset.report
    messages.success(request, f"Imported {report['images_created']} images and {report['captions_created']} captions "
                              f"into {dataset.name}.")
    return redirect("dataset-detail", dataset_id=dataset.pk)


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
    path("datasets/import/", dataset_upload, name="dataset-import"),
    path("datasets/<int:dataset_id>/", dataset_detail, name="dataset-detail"),
]
