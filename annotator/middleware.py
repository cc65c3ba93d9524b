"""Request-level guards that must run before anything reads the request body."""

from django.conf import settings
from django.http import HttpResponse, JsonResponse


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
