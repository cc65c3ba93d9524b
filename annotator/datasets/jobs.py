"""Dataset imports as jobs of the shared lifecycle (annotator.core.jobs)."""

from __future__ import annotations

from django.urls import reverse

from annotator.core.jobs import IMPORT_STALE_AFTER, JobKind, JobState, job_kind_register
from annotator.datasets.models.dataset import DATASET_TRANSITIONS, Dataset, DatasetStatus
from annotator.datasets.selectors.access import can_manage_dataset, datasets_visible_to
from annotator.datasets.services.uploads import dataset_import_retry


class ImportKind(JobKind):
    name, label, model, transitions = "import", "Import", Dataset, DATASET_TRANSITIONS

    def retry(self, job):
        return dataset_import_retry(dataset=job)

    def state(self, dataset):
        if dataset.status == DatasetStatus.IMPORTING:
            return JobState.QUEUED if (dataset.report or {}).get("phase") == "queued" else JobState.RUNNING
        return JobState.FAILED if dataset.status == DatasetStatus.FAILED else JobState.DONE

    def last_alive(self, dataset):
        return dataset.updated_at  # every progress write moves it

    def stale_after(self, state):
        return IMPORT_STALE_AFTER

    def progress(self, dataset):
        total = dataset.images_total + dataset.captions_total
        done = min(dataset.images_done, dataset.images_total) + min(dataset.captions_done, dataset.captions_total)
        return done, total, "images and captions"

    def error(self, dataset):
        if dataset.status != DatasetStatus.FAILED:
            return ""
        return "; ".join(str(error) for error in ((dataset.report or {}).get("errors") or [])[:3])

    def page(self, dataset):
        return reverse("dataset-detail", args=[dataset.pk])

    def visible(self, user):
        return datasets_visible_to(user)

    def may_retry(self, user, dataset):
        return can_manage_dataset(user, dataset)


job_kind_register(ImportKind())
