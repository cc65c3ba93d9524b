from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 2**62  # beyond any table; larger offsets would overflow the database's integer


class Pagination(LimitOffsetPagination):
    """limit/offset pages of at most 1000 rows (default 100, settings.PAGE_SIZE)."""

    max_limit = 1000

    def get_offset(self, request):
        return min(super().get_offset(request), MAX_OFFSET)
