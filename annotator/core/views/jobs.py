"""Background jobs of every kind: the status the progress widget polls, and its retry button.

Who may see a job is who may see what it works on; who may retry it is who may start it: the dataset's or the
campaign's requester, and for an export whoever reads the campaign's labels. Each kind answers both with its step's
access rules (`annotator.core.jobs.JobKind.visible`, `may_retry`), so core knows no step.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotator.core.jobs import KINDS, job_retry, job_view
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required


def _job_or_404(user, kind: str, job_id: int, *, manage: bool):
    """The job if `user` may see it (and, with `manage`, retry it); 404 or 403 otherwise."""
    if kind not in KINDS:
        raise Http404("No such kind of job.")
    job = get_object_or_404(KINDS[kind].visible(user), pk=job_id)
    if manage and not KINDS[kind].may_retry(user, job):
        raise PermissionDenied(f"Only the requester who owns this {KINDS[kind].label.lower()} can retry it.")
    return job


@require_GET
@role_required(Role.REQUESTER, Role.RESEARCHER)
def job_status(request, kind: str, job_id: int):
    """The job as the progress widget shows it (annotator.core.jobs.job_view), as JSON."""
    return JsonResponse(job_view(_job_or_404(request.user, kind, job_id, manage=False)))


@require_POST
@role_required(Role.REQUESTER, Role.RESEARCHER)
def job_retry_submit(request, kind: str, job_id: int):
    """Queue a failed or stalled job again, then back to its page."""
    job = job_retry(_job_or_404(request.user, kind, job_id, manage=True))
    messages.success(request, f"{KINDS[kind].label} {job.pk} is queued again.")
    return redirect(KINDS[kind].page(job))


urlpatterns = [
    path("jobs/<str:kind>/<int:job_id>/status.json", job_status, name="job-status"),
    path("jobs/<str:kind>/<int:job_id>/retry/", job_retry_submit, name="job-retry"),
]
