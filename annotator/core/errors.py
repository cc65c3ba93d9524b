"""Errors and what a person is told about them: one mapping from an exception to a status and a message,
used by the API's exception handler (JSON), the HTML error middleware (a page) and the outage middleware
(503 with Retry-After), so the same mistake gets the same answer on a page as through the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

OUTAGE_MESSAGE = "Vericap is briefly unavailable. Nothing you saved is lost; try again in a few seconds."
DEFAULT_RETRY_AFTER_SECONDS = 5


class ApplicationError(Exception):
    """The one exception a service raises for a person's mistake.

    The DRF exception handler and the HTML error middleware turn it into a clear 400 (or `status`), never
    a 500. `extra` carries structured detail, e.g. the list of offenders of a failed import.
    """

    def __init__(self, message: str, extra: dict | None = None, status: int = 400):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
        self.status = status


@dataclass(frozen=True)
class ErrorAnswer:
    """What to answer for an error: the status, the person's message, structured detail, and for an outage
    how many seconds to wait (the Retry-After header)."""

    status: int
    message: str
    extra: dict = field(default_factory=dict)
    retry_after: int | None = None


@cache
def outage_errors() -> tuple[type[BaseException], ...]:
    """PostgreSQL unreachable or its connection dropped, Redis unreachable, full or read-only, the broker down.

    A deadlock or a cancelled statement is an OperationalError too: also transient, also worth a retry.
    Imported lazily so that a settings module can name this without importing redis and kombu first.
    """
    import redis.exceptions
    from django.db import InterfaceError, OperationalError
    from kombu.exceptions import OperationalError as BrokerOperationalError

    return (
        OperationalError,
        InterfaceError,
        redis.exceptions.ConnectionError,
        redis.exceptions.TimeoutError,
        redis.exceptions.OutOfMemoryError,
        redis.exceptions.ReadOnlyError,
        redis.exceptions.BusyLoadingError,
        BrokerOperationalError,
    )


def is_outage(error: BaseException | None) -> bool:
    return error is not None and isinstance(error, outage_errors())


def retry_after_seconds() -> int:
    from django.conf import settings

    return int(getattr(settings, "OUTAGE_RETRY_AFTER_SECONDS", DEFAULT_RETRY_AFTER_SECONDS))


def error_answer(error: BaseException) -> ErrorAnswer | None:
    """The answer for `error`, or None for a defect (a real 500, logged and never disguised).

    - ApplicationError: its own status, message and extra.
    - Django's Http404, PermissionDenied, ValidationError (a model's full_clean that escaped a service) and
      BadRequest: 404, 403, 400, 400. (SuspiciousOperation stays Django's: a 400 that is logged as such.)
    - A component briefly unavailable (PostgreSQL, Redis, the broker): 503 with Retry-After.
    """
    from django.core.exceptions import BadRequest, PermissionDenied, ValidationError
    from django.http import Http404

    if isinstance(error, ApplicationError):
        return ErrorAnswer(error.status, error.message, dict(error.extra))
    if isinstance(error, Http404):
        text = error.args[0] if error.args and isinstance(error.args[0], str) else ""
        return ErrorAnswer(404, text or "Not found.")
    if isinstance(error, PermissionDenied):
        return ErrorAnswer(403, str(error) or "You do not have permission to do this.")
    if isinstance(error, ValidationError):
        fields = error.message_dict if hasattr(error, "error_dict") else {"non_field_errors": error.messages}
        first = next((f"{k}: {v[0]}" if k != "non_field_errors" else v[0] for k, v in fields.items() if v), "")
        return ErrorAnswer(400, first or "Invalid input.", {"fields": fields})
    if isinstance(error, BadRequest):
        return ErrorAnswer(400, str(error) or "Bad request.")
    if is_outage(error):
        return ErrorAnswer(503, OUTAGE_MESSAGE, retry_after=retry_after_seconds())
    return None
