"""Label exports as jobs of the shared lifecycle (annotator.core.jobs)."""

from __future__ import annotations

from django.urls import reverse

from annotator.core.jobs import EXPORT_STALE_AFTER, JobKind, JobState, job_kind_register, queued_stale_after
from annotator.labels.models.exports import EXPORT_TRANSITIONS, ExportJob, ExportStatus
from annotator.labels.selectors.access import exports_visible_to
from annotator.labels.services.exports.jobs import export_retry


class ExportKind(JobKind):
    name, label, model, transitions = "export", "Export", ExportJob, EXPORT_TRANSITIONS

    def retry(self, job):
        return export_retry(job=job)

    def last_alive(self, job):
        return job.started_at if job.status == ExportStatus.RUNNING else job.queued_at or job.created_at

    def stale_after(self, state):
        return queued_stale_after() if state == JobState.QUEUED else EXPORT_STALE_AFTER

    def progress(self, job):
        return job.rows, job.rows, "rows"

    def page(self, job):
        return reverse("research-campaign", args=[job.campaign_id])

    def visible(self, user):
        return exports_visible_to(user)

    def may_retry(self, user, export):
        return True  # whoever reads a campaign's labels may export them


job_kind_register(ExportKind())
