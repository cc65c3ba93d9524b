from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 2**62  # beyond any table; larger offsets would overflow the database's integer


def _bounded_int(name: str, raw: str, low: int, high: int) -> int:
    """`raw` as a whole number from `low` to `high`, or a 400 that says so (never a silent default)."""
    text = raw.strip()
    if text.isascii() and text.isdigit() and low <= int(text) <= high:
        return int(text)
    raise ValidationError({name: [f"{name} must be a whole number from {low} to {high}; got {raw[:40]!r}."]})


class Pagination(LimitOffsetPagination):
    """limit/offset pages of at most 1000 rows (default 100, settings.PAGE_SIZE).

    A limit or offset that is not a whole number in range is a 400 with a message, as the schema says:
    silently serving the default page would hand a client a page it did not ask for.
    """

    max_limit = 1000

    def get_limit(self, request):
        raw = request.query_params.get(self.limit_query_param)
        if raw is None:
            return self.default_limit
        return _bounded_int(self.limit_query_param, raw, 1, self.max_limit)

    def get_offset(self, request):
        raw = request.query_params.get(self.offset_query_param)
        if raw is None:
            return 0
        return _bounded_int(self.offset_query_param, raw, 0, MAX_OFFSET)

    def get_schema_operation_parameters(self, view):
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": self.max_limit, "default": self.default_limit},
            self.offset_query_param: {"minimum": 0, "maximum": MAX_OFFSET, "default": 0},
        }
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters
