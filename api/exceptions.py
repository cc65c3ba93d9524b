"""The one exception handler of the API: every error is JSON `{"error": message, ...}` with a 4xx status.

ApplicationError and Django's own exceptions are answered from annotator.core.errors.error_answer, the mapping
the HTML pages use too, so the same mistake has the same status on a page and here. DRF's own errors
(validation, authentication, permission, not found, throttling, parse errors) keep their status and get
the same shape, with per-field messages under `fields` for a validation error. An outage is left to
OutageMiddleware (a read is tried once more, then 503 with Retry-After, from the same mapping).
"""

from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotator.core.errors import error_answer


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
    if not isinstance(exc, exceptions.APIException):
        answer = error_answer(exc)
        if answer is None or answer.retry_after is not None:
            return None  # an outage (OutageMiddleware answers 503) or a defect: a real 500, never disguised
        return Response({"error": answer.message, **answer.extra}, status=answer.status)

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
