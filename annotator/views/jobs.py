"""Background jobs of every kind: the status the progress widget polls, and its retry button.

Who may see a job is who may see what it works on (annotator.access); who may retry it is who may start
it: the dataset's or the campaign's requester, and for an export whoever reads the campaign's labels.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotator.access import (
    campaigns_visible_to,
    can_manage_campaign,
    can_manage_dataset,
    can_manage_enlargement,
    can_manage_pool,
    can_manage_refinement,
    can_manage_run,
    datasets_visible_to,
    enlargements_visible_to,
    exports_visible_to,
    pools_visible_to,
    refinements_managed_by,
    runs_visible_to,
)
from annotator.jobs import KINDS, job_retry, job_view
from annotator.models import Role
from annotator.views.access import role_required

VISIBLE = {
    "import": datasets_visible_to,
    "ranking": runs_visible_to,
    "build": campaigns_visible_to,
    "export": exports_visible_to,
    "pool": pools_visible_to,
    "enlargement": enlargements_visible_to,
    "refinement": refinements_managed_by,
}
MAY_RETRY = {
    "import": can_manage_dataset,
    "ranking": can_manage_run,
    "build": can_manage_campaign,
    "export": lambda user, job: True,  # whoever reads a campaign's labels may export them
    "pool": can_manage_pool,
    "enlargement": can_manage_enlargement,
    "refinement": can_manage_refinement,
}


def _job_or_404(user, kind: str, job_id: int, *, manage: bool):
    """The job if `user` may see it (and, with `manage`, retry it); 404 or 403 otherwise."""
    if kind not in KINDS:
        raise Http404("No such kind of job.")
    job = get_object_or_404(VISIBLE[kind](user), pk=job_id)
    if manage and not MAY_RETRY[kind](user, job):
        raise PermissionDenied(f"Only the requester who owns this {KINDS[kind].label.lower()} can retry it.")
    return job


@require_GET
@role_required(Role.REQUESTER, Role.RESEARCHER)
def job_status(request, kind: str, job_id: int):
    """The job as the progress widget shows it (annotator.jobs.job_view), as JSON."""
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
