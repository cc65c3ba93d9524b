"""Reading a list page's filter from GET parameters: a search text, a status and a sort key, each from a fixed
list; anything else is a 400 that names what is allowed, never a 500. The steps' lists declare their statuses and
sorts (annotator/datasets/selectors/listing.py, annotator/campaigns/selectors/listing.py)."""

from __future__ import annotations

from dataclasses import dataclass

from annotator.core.errors import ApplicationError

PAGE_SIZE = 25
MAX_QUERY_LENGTH = 200


@dataclass(frozen=True)
class ListFilter:
    """What the person asked for: a search text, a status (or ""), a sort key."""

    q: str
    status: str
    sort: str


def list_filter_read(params, *, statuses, sorts: dict, default_sort: str) -> ListFilter:
    q = (params.get("q") or "").strip()
    status = (params.get("status") or "").strip()
    sort = (params.get("sort") or "").strip() or default_sort
    if len(q) > MAX_QUERY_LENGTH:
        raise ApplicationError(f"Search for at most {MAX_QUERY_LENGTH} characters.")
    if status and status not in statuses:
        raise ApplicationError(f"Unknown status {status!r}; one of: {', '.join(statuses)}.")
    if sort not in sorts:
        raise ApplicationError(f"Unknown sort {sort!r}; one of: {', '.join(sorts)}.")
    return ListFilter(q=q, status=status, sort=sort)
