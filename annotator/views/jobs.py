"""Background jobs of every kind: the status the progress widget polls, and its retry button.

Who may see a job is who may see its page: the dataset's requester for an import, the readers of the
dataset's runs for a ranking run, the campaign's requester for a build, the campaign's readers for an
export. Who may retry it is who may start it.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotator.auth import user_role
from annotator.errors import ApplicationError
from annotator.jobs import KINDS, job_retry, job_view
from annotator.models import RankingRun, Role
from annotator.selectors.campaigns import campaign_get_for_owner
from annotator.selectors.datasets import dataset_get_visible
from annotator.selectors.research import export_list_readable
from annotator.views.access import application_errors_as_400, role_required
from annotator.views.ranking import _may_manage as may_manage_runs
from annotator.views.ranking import _may_read as may_read_runs


def _job_or_404(user, kind: str, job_id: int, *, manage: bool):
    """The job if `user` may see it (and, with `manage`, retry it); 404 or 403 otherwise."""
    role = user_role(user)
    if kind == "import" and role == Role.REQUESTER:
        try:
            return dataset_get_visible(user=user, dataset_id=job_id)
        except ApplicationError:
            raise Http404("No such import.") from None
    if kind == "ranking":
        run = get_object_or_404(RankingRun.objects.select_related("annotator", "dataset"), pk=job_id)
        if not may_read_runs(user, run.dataset):
            raise Http404("No such ranking run.")
        if manage and not may_manage_runs(user, run.dataset):
            raise PermissionDenied("Only the requester who owns this dataset can retry its runs.")
        return run
    if kind == "build" and role == Role.REQUESTER:
        campaign = campaign_get_for_owner(owner=user, campaign_id=job_id)
        if campaign is None:
            raise Http404("No such campaign.")
        return campaign
    if kind == "export" and role in (Role.REQUESTER, Role.RESEARCHER):
        return get_object_or_404(export_list_readable(user=user), pk=job_id)
    raise Http404("No such job.")


@require_GET
@role_required(Role.REQUESTER, Role.RESEARCHER)
def job_status(request, kind: str, job_id: int):
    """The job as the progress widget shows it (annotator.jobs.job_view), as JSON."""
    if kind not in KINDS:
        raise Http404("No such kind of job.")
    return JsonResponse(job_view(_job_or_404(request.user, kind, job_id, manage=False)))


@require_POST
@role_required(Role.REQUESTER, Role.RESEARCHER)
@application_errors_as_400
def job_retry_submit(request, kind: str, job_id: int):
    """Queue a failed or stalled job again, then back to its page."""
    if kind not in KINDS:
        raise Http404("No such kind of job.")
    job = job_retry(_job_or_404(request.user, kind, job_id, manage=True))
    messages.success(request, f"{KINDS[kind].label} {job.pk} is queued again.")
    return redirect(KINDS[kind].page(job))


urlpatterns = [
    path("jobs/<str:kind>/<int:job_id>/status.json", job_status, name="job-status"),
    path("jobs/<str:kind>/<int:job_id>/retry/", job_retry_submit, name="job-retry"),
]
