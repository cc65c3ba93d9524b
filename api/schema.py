"""The OpenAPI schema says every way an operation can answer, errors included.

Errors all have one body (api/exceptions.py, and the outage middleware's 503): `{"error": message, ...}`.
AutoSchema adds to each operation the error responses its view can give, read from the view itself:
- 400 when the operation takes input (a body, or query parameters such as the page bounds); 413 and 415
  when it takes a body (one over the upload limit is refused before it is read; one in a media type the
  operation does not read is refused),
- 401 when it needs a logged-in caller, 403 when it checks the caller's role,
- 404 when it looks an object up by the id in its path,
- 429 when it is throttled, 503 always (PostgreSQL or Redis away), both with Retry-After.
What only the service knows (a state conflict, 409; an id in the body that does not exist, 404) the view
declares itself with `errors(...)` in its @extend_schema responses.

Read-only choice fields of a model field that may be blank ("" for "not this kind of set") say so: DRF
drops `allow_blank` from read-only fields, which would make the schema refuse a value the API sends.
"""

from django.core.exceptions import FieldDoesNotExist
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated

from api.permissions import RolePermission

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

DESCRIPTIONS = {
    400: "The input is wrong: `error` says what, `fields` holds a message per field.",
    401: "No credentials, or a token that is not valid.",
    403: "The caller's role may not do this.",
    404: "No such object, or it is not the caller's to see.",
    409: "The object's state does not allow this now: `error` says why.",
    413: "The body or a file in it is over the size limit: `error` gives the limit.",
    415: "The body's Content-Type is not one this operation reads.",
    429: "Too many requests: try again after Retry-After seconds.",
    503: "A component (PostgreSQL, Redis) is briefly away: try again after Retry-After seconds.",
}
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}}


ERROR_SCHEMA = {
    "type": "object",
    "description": "The body of every error: a message for a person, and structured detail where there is some.",
    "properties": {
        "error": {"type": "string", "description": "What went wrong, in a sentence for a person."},
        "fields": {"description": "With a validation error (400): the messages per field."},
        "retry_after": {"type": "integer", "description": "With a 503: seconds to wait."},
    },
    "required": ["error"],
}
ERROR_COMPONENT = ResolvedComponent(name="Error", type=ResolvedComponent.SCHEMA, object="Error", schema=ERROR_SCHEMA)


def errors(*codes: int) -> dict:
    """Error responses for @extend_schema(responses={...}): `{200: X, **errors(404, 409)}`."""
    return {code: OpenApiResponse(ERROR_COMPONENT.ref, description=DESCRIPTIONS[code]) for code in codes}


class AutoSchema(SpectacularAutoSchema):
    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        registry.register_on_missing(ERROR_COMPONENT)
        responses = operation["responses"]
        for code in self._error_codes(operation):
            if str(code) not in responses:
                responses[str(code)] = self._error_response(code)
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        if isinstance(field, serializers.ChoiceField) and field.read_only and _model_field_may_be_blank(field):
            field.allow_blank = True
        return super()._map_serializer_field(field, direction, bypass_extensions)

    def _error_codes(self, operation: dict) -> list[int]:
        view = self.view
        permissions = [type(permission) for permission in view.get_permissions()]
        codes = [503]
        if self.method in WRITE_METHODS or "requestBody" in operation or _has_query(operation):
            codes.append(400)
        if "requestBody" in operation:
            codes += [413, 415]
        if any(issubclass(permission, (IsAuthenticated, RolePermission)) for permission in permissions):
            codes.append(401)
        if RolePermission in permissions:
            codes.append(403)
        if any(parameter["in"] == "path" for parameter in operation.get("parameters", [])):
            codes.append(404)
        if view.get_throttles():
            codes.append(429)
        return codes

    def _error_response(self, code: int) -> dict:
        response = {"description": DESCRIPTIONS[code], "content": {"application/json": {"schema": ERROR_COMPONENT.ref}}}
        if code in (429, 503):
            response["headers"] = RETRY_AFTER
        return response


def _has_query(operation: dict) -> bool:
    return any(parameter["in"] == "query" for parameter in operation.get("parameters", []))


def _model_field_may_be_blank(field) -> bool:
    model = getattr(getattr(field.parent, "Meta", None), "model", None)
    if model is None or "." in field.source:
        return False
    try:
        return model._meta.get_field(field.source).blank
    except FieldDoesNotExist:
        return False
