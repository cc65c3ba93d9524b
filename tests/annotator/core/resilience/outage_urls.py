"""Views that fail the way an outage makes them fail, for test_outage_middleware.py."""

import redis.exceptions
from django.db import OperationalError
from django.http import Http404, HttpResponse
from django.urls import path

calls: list[str] = []


def flaky_read(request):
    """Fails once (a connection PostgreSQL dropped), then works."""
    calls.append(request.method)
    if len(calls) == 1:
        raise OperationalError("server closed the connection unexpectedly")
    return HttpResponse("read ok")


def always_down(request):
    calls.append(request.method)
    raise OperationalError("could not connect to server: Connection refused")


def down_then_missing(request):
    calls.append(request.method)
    if len(calls) == 1:
        raise OperationalError("terminating connection due to administrator command")
    raise Http404("No such thing.")


def cache_down(request):
    calls.append(request.method)
    raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


def broken(request):
    raise ValueError("a bug, not an outage")


urlpatterns = [
    path("flaky", flaky_read),
    path("down", always_down),
    path("missing", down_then_missing),
    path("cache-down", cache_down),
    path("broken", broken),
]
