"""Request-level guards that must run before anything reads the request body, and the error pages."""

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from annotator.core.errors import ErrorAnswer, error_answer

_POLICY_CHANGES = ("_csp_config", "_csp_update", "_csp_replace", "_csp_config_ro", "_csp_update_ro", "_csp_replace_ro")
_CSP_HEADERS = (
    (HEADER, "CONTENT_SECURITY_POLICY", False),
    (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", True),
)

# Statuses with a page of their own (templates/<status>.html); any other 4xx uses templates/error.html.
ERROR_PAGES = frozenset({400, 403, 404, 409, 503})


class RequestSizeLimitMiddleware:
    """Refuse (413) a request whose Content-Length is over IMPORT_MAX_UPLOAD_BYTES, without reading it.

    The largest legitimate body is a dataset upload; anything larger is refused before Django parses it
    (the CSRF check would read and spool it to a temporary file otherwise).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.IMPORT_MAX_UPLOAD_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            message = (
                f"The upload is {length:,} bytes, over the limit of {limit:,} (IMPORT_MAX_UPLOAD_BYTES). "
                "Import a larger dataset with manage.py import_dataset."
            )
            # The body is never read: the connection must not be reused for another request.
            if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
                response = JsonResponse({"error": message, "limit": limit}, status=413)
            else:
                response = HttpResponse(message, content_type="text/plain; charset=utf-8", status=413)
            response["Connection"] = "close"
            return response
        return self.get_response(request)


def wants_json(request) -> bool:
    """API and script callers (hit.js autosave, progress polling) get JSON errors; browsers get a page."""
    return (
        request.path.startswith("/api/")
        or "application/json" in request.headers.get("Accept", "")
        or request.content_type == "application/json"
    )


def error_response(request, answer: ErrorAnswer, *, reload: bool = False) -> HttpResponse:
    """`answer` as JSON `{"error": message, ...extra}` or as the page for its status; Retry-After on a 503.

    A 503 page is rendered without the request context: the context processors would read the session and
    the user from the database that is away.
    """
    if wants_json(request):
        body = {"error": answer.message, **answer.extra}
        if answer.retry_after is not None:
            body["retry_after"] = answer.retry_after
        response = JsonResponse(body, status=answer.status)
    else:
        template = f"{answer.status}.html" if answer.status in ERROR_PAGES else "error.html"
        context = {"message": answer.message, "extra": answer.extra, "status": answer.status}
        if answer.retry_after is not None:
            context.update(retry_after=answer.retry_after, reload=reload)
            response = HttpResponse(render_to_string(template, context), status=answer.status)
        else:
            response = render(request, template, context, status=answer.status)
    if answer.retry_after is not None:
        response["Retry-After"] = str(answer.retry_after)
        response["Cache-Control"] = "no-store"
    return response


class ErrorPageMiddleware:
    """A view's error, answered from the one mapping (annotator.core.errors.error_answer): a person's mistake,
    a missing or forbidden object is its 4xx page (or JSON for scripts). Outages are left to
    OutageMiddleware, which tries a safe request once more first; defects stay 500s."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        answer = error_answer(exception)
        if answer is None or answer.retry_after is not None:
            return None
        return error_response(request, answer)


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's middleware, with the site-wide policy built once instead of on every response.

    django-csp builds the header from the settings for each response (about 2% of a crowd request's CPU).
    A response that changes the policy (`_csp_update`, `_csp_replace`, `_csp_config`: the MTurk frame) or
    a request that used a nonce still goes through django-csp as before; the rest get the header django-csp
    built for the same settings objects (a test's override_settings brings new ones, and so a new header).
    """

    _built: dict[str, tuple[object, str]] = {}

    def process_response(self, request, response):
        if any(getattr(response, name, None) for name in _POLICY_CHANGES) or getattr(request, "_csp_nonce", None):
            return super().process_response(request, response)
        if response.status_code in (500, 404) and settings.DEBUG:
            return response
        for header, setting, report_only in _CSP_HEADERS:
            policy = getattr(settings, setting, None)
            built = self._built.get(setting)
            if built is None or built[0] is not policy:
                built = (policy, build_policy(report_only=report_only))
                self._built[setting] = built
            prefixes = tuple((policy or {}).get("EXCLUDE_URL_PREFIXES", None) or ())
            exempt = getattr(response, "_csp_exempt_ro" if report_only else "_csp_exempt", False)
            if built[1] and header not in response and not exempt and not request.path_info.startswith(prefixes):
                response[header] = built[1]
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response
