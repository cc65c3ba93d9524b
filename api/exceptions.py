"""The one exception handler of the API: every error is JSON `{"error": message, ...}` with a 4xx status.

ApplicationError (raised by services) keeps its message, its structured `extra` and its status; DRF's own
errors (validation, authentication, permission, not found, throttling, parse errors) keep their status
and get the same shape, with per-field messages under `fields` for a validation error.
"""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotator.errors import ApplicationError


def _first_message(detail) -> str:
    """The first human message inside a DRF error detail (a string, a list or a dict of them)."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            message = _first_message(value)
            if message:
                return message if key in ("non_field_errors", "detail") else f"{key}: {message}"
        return ""
    if isinstance(detail, list):
        for value in detail:
            message = _first_message(value)
            if message:
                return message
        return ""
    return str(detail)


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return Response({"error": exc.message, **exc.extra}, status=exc.status)
    if isinstance(exc, DjangoValidationError):
        # A model's full_clean() that escaped a service: still the person's input, never a 500.
        messages = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(messages)
    if isinstance(exc, Http404):
        return Response({"error": "Not found."}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, DjangoPermissionDenied):
        return Response({"error": str(exc) or "You do not have permission to do this."}, status=403)

    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # an unexpected error: a real 500, logged by Django, never disguised
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail if isinstance(exc.detail, (dict, list)) else [exc.detail]
        payload = {"error": _first_message(detail) or "Invalid input.", "fields": response.data}
    else:
        payload = {"error": _first_message(response.data) or "Request failed."}
    response.data = payload
    return response
