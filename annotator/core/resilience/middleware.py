"""Outages answer 503 with Retry-After, never 500; a safe request is tried once more first.

OutageMiddleware.process_exception sees what a view raises. A GET or HEAD that failed because PostgreSQL
dropped its connection (a restart, a failover, pg_terminate_backend) or Redis was unreachable is run
once more on a fresh connection: such a read changes nothing, and most blinks are over by then. Anything
else, or a second failure, is a 503 with Retry-After: the person's browser (hit.js) or client tries again,
and every write a worker sends is idempotent (autosave, submit, claim), so trying again is safe.

`server_error` is the project's handler500: it answers the same 503 for an outage that escapes outside a
view (a session saved in SessionMiddleware while PostgreSQL is away), and Django's 500 page otherwise.
"""

import logging
import sys

from django.core.handlers.exception import response_for_exception
from django.db import connections
from django.http import HttpResponse
from django.views.defaults import server_error as django_server_error

from annotator.core.errors import error_answer, is_outage
from annotator.core.middleware import error_response

logger = logging.getLogger(__name__)

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def outage_response(request, error: BaseException) -> HttpResponse:
    """503 with Retry-After (annotator.core.errors.error_answer); JSON for API and script callers, a page that
    needs no database otherwise, which reloads itself after a read."""
    return error_response(request, error_answer(error), reload=request.method in SAFE_METHODS)


def reset_broken_connections() -> None:
    """Close database connections that failed, so the next query opens a fresh one."""
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            continue  # the view's own transaction is over by now; a test's is not ours to close
        try:
            connection.close_if_unusable_or_obsolete()
        except Exception:  # closing a dead socket can fail too; the connection is dropped either way
            connection.connection = None


class OutageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not is_outage(exception):
            return None
        reset_broken_connections()
        match = getattr(request, "resolver_match", None)
        if request.method in SAFE_METHODS and match is not None and not getattr(request, "_outage_retried", False):
            request._outage_retried = True
            logger.warning(
                "%s %s: %s: %s; trying once more", request.method, request.path, type(exception).__name__, exception
            )
            try:
                return match.func(request, *match.args, **match.kwargs)
            except Exception as again:
                if not is_outage(again):
                    # A 404, a 403, a person's mistake: the usual answer for it, as if nothing had failed.
                    answer = error_answer(again)
                    return error_response(request, answer) if answer else response_for_exception(request, again)
                reset_broken_connections()
                exception = again
        logger.warning("%s %s answered 503: %s: %s", request.method, request.path, type(exception).__name__, exception)
        return outage_response(request, exception)


def server_error(request, *args, **kwargs):
    """handler500: an outage outside a view is still a 503; anything else is Django's own 500 page."""
    error = sys.exc_info()[1]
    if is_outage(error):
        reset_broken_connections()
        return outage_response(request, error)
    return django_server_error(request, *args, **kwargs)
