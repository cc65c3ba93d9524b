"""Hit.has_room: which HITs a claim looks at.

A claim scans open HITs in order for one with fewer active assignments (reserved, submitted, approved)
than it requires. Counting them for every HIT made a claim late in a campaign cost a scan of every full
HIT before it; the flag (and a partial index on it) keeps full HITs out of that scan.

The rules that keep the flag safe:
- False is written only while holding the HIT's row lock, right after counting (`hit_room_recount`).
- Whatever frees a slot (an assignment leaving the active statuses, a raised assignments_required) sets
  it back to True with an UPDATE in the same transaction (`hit_room_freed`). The UPDATE takes the HIT's
  row lock, so it lands after any claim that counted the slot as taken; a slot is never lost.
- A claim recounts under the lock anyway, so a True on a full HIT only costs that claim one skip.
"""

from django.db import connection

from annotator.campaigns.models.campaign import Hit
from annotator.crowd.models.crowd import ACTIVE_ASSIGNMENT_STATUSES, Assignment
from annotator.crowd.rows import fetch_one, table

_ACTIVE = ", ".join(f"'{status.value}'" for status in ACTIVE_ASSIGNMENT_STATUSES)


def hit_active_count(*, hit_id: int) -> int:
    # SQL text, not the ORM: every claim counts once, and compiling the count cost more than running it.
    return fetch_one(f"SELECT COUNT(*) FROM {table(Assignment)} WHERE hit_id = %s AND status IN ({_ACTIVE})", [hit_id])[
        0
    ]


def hit_room_recount(*, hit: Hit, adding: int = 0) -> int:
    """Count the HIT's active assignments and set has_room for after `adding` more. Caller holds the row lock.

    Returns the count before `adding`.
    """
    active = hit_active_count(hit_id=hit.pk)
    has_room = active + adding < hit.assignments_required
    if has_room != hit.has_room:
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table(Hit)} SET has_room = %s WHERE id = %s", [has_room, hit.pk])
        hit.has_room = has_room
    return active


def hit_room_freed(*, hit_id: int) -> None:
    """A slot of the HIT may have freed up: offer it to claims again. Call inside the freeing transaction."""
    Hit.objects.filter(pk=hit_id).update(has_room=True)


def assignment_left_active(previous: str, target: str) -> bool:
    return previous in ACTIVE_ASSIGNMENT_STATUSES and target not in ACTIVE_ASSIGNMENT_STATUSES
