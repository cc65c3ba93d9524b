"""The gate of the crowd worker's pages: a logged-in worker or an MTurk worker of this session, and MTurk's frame."""

from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from annotator.core.selectors.access import is_worker
from annotator.crowd.models.crowd import Worker
from annotator.crowd.services.workers import (
    worker_for_user,
)

SESSION_MTURK_WORKER = "mturk_worker_id"


def external_worker(request) -> Worker | None:
    worker_id = request.session.get(SESSION_MTURK_WORKER)
    if not worker_id:
        return None
    return Worker.objects.filter(pk=worker_id).first()


def worker_required(view):
    """A crowd worker: a logged-in account with the worker role, or an MTurk worker of this session."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        worker = None
        if request.user.is_authenticated:
            # The log-in backend (annotator.crowd.auth) loaded the worker and the role with the user: no query here.
            worker = getattr(request.user, "worker", None)
            if not is_worker(request.user):
                raise PermissionDenied("These pages are for crowd workers.")
            if worker is None:
                worker = worker_for_user(user=request.user)
        else:
            worker = external_worker(request)
        if worker is None:
            return redirect_to_login(request.get_full_path())
        request.worker = worker
        return allow_mturk_frame(view(request, *args, **kwargs), worker)

    return wrapped


def mturk_frame_ok(response):
    """MTurk shows an ExternalQuestion in an iframe: allow exactly MTurk's origins to frame it; the rest of
    the page's Content-Security-Policy (settings.CONTENT_SECURITY_POLICY) stays as strict as everywhere."""
    response.xframe_options_exempt = True
    response._csp_replace = {"frame-ancestors": ["'self'", *settings.MTURK_ORIGINS]}
    return response


def allow_mturk_frame(response, worker: Worker):
    if worker.external_id:
        mturk_frame_ok(response)
    return response
