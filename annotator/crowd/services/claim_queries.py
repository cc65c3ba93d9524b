"""The claim's reads, written as SQL (`annotator.crowd.rows`): a claim runs three of them on every HIT a worker takes.

Built with the ORM they cost about 6 ms of CPU per claim to compile and populate, five times what
PostgreSQL spends running them. The rules they encode are documented on `assignment_claim`, which calls
them inside its transaction; here is only how each is read and locked:

- `lock_worker_with_campaign`: the worker's row, locked (one claim per worker at a time), with the campaign
  beside it (None when there is none), the owner's block and soft block of the worker, whether the
  worker passed the campaign's qualification test and their clean gold streak with the owner (adaptive gold);
- `lock_own_reserved`: the worker's reserved leases in the campaign, locked, oldest first;
- `next_hit_with_room`: the first open HIT (stage, then index order; within a stage the gold density the
  worker's record calls for first: `light_first`) with room for one more active assignment that the worker
  has not had and that holds no pair the worker was shown before, locked; other claimers' locked HITs are
  skipped. With `unlocked`, the same HIT is read without any lock (the claim then waits for that one HIT
  with `lock_hit`). Either order is one of the two claim indexes on Hit;
- `lock_hit`: one HIT by id, locked, waiting for whoever holds it.

On SQLite (the embedded default) the same SQL runs without the locking clauses; its single writer
serialises claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.db import connection

from annotator.campaigns.models.campaign import Campaign, Hit, HitItem, HitStatus
from annotator.crowd.models.crowd import (
    ACTIVE_ASSIGNMENT_STATUSES,
    Assignment,
    AssignmentStatus,
    QualificationAttempt,
    Worker,
)
from annotator.crowd.models.standing import WorkerStanding
from annotator.crowd.rows import (
    attach,
    fetch_all,
    fetch_one,
    ids_fit,
    instances,
    select_list,
    table,
)


def _locks() -> bool:
    return connection.features.has_select_for_update_of


@cache
def _worker_with_campaign_sql(vendor: str, locks: bool) -> str:
    standing = f"SELECT 1 FROM {table(WorkerStanding)} s WHERE s.requester_id = c.owner_id AND s.worker_id = w.id"
    passed = (
        f"SELECT 1 FROM {table(QualificationAttempt)} q WHERE q.campaign_id = c.id AND q.worker_id = w.id AND q.passed"
    )
    return (
        f"SELECT {select_list(Worker, 'w')}, {select_list(Campaign, 'c')},"
        f" EXISTS({standing} AND s.blocked), EXISTS({standing} AND s.soft_blocked), EXISTS({passed}),"
        f" ({standing.replace('SELECT 1', 'SELECT s.gold_clean_streak', 1)})"
        f" FROM {table(Worker)} w LEFT JOIN {table(Campaign)} c ON c.id = %s WHERE w.id = %s"
        + (" FOR UPDATE OF w" if locks else "")
    )


@dataclass(frozen=True)
class ClaimStanding:
    """What a claim knows of the worker with the campaign's owner, read in the same statement as the
    worker's lock: the owner's block and soft block, a passed qualification test, the clean gold streak."""

    blocked: bool = False
    soft_blocked: bool = False
    passed_qualification: bool = False
    gold_clean_streak: int = 0


def lock_worker_with_campaign(
    *, worker_id: int, campaign_id: int
) -> tuple[Worker | None, Campaign | None, ClaimStanding]:
    if not ids_fit(campaign_id):
        campaign_id = None  # an id from a URL past the key range: no such campaign
    row = fetch_one(_worker_with_campaign_sql(connection.vendor, _locks()), [campaign_id, worker_id])
    if row is None:
        return None, None, ClaimStanding()
    worker, campaign = instances(row[:-4], Worker, Campaign)
    blocked, soft_blocked, passed, streak = row[-4:]
    standing = ClaimStanding(bool(blocked), bool(soft_blocked), bool(passed), streak or 0)
    return worker, campaign, standing if campaign is not None else ClaimStanding()


@cache
def _own_reserved_sql(vendor: str, locks: bool) -> str:
    return (
        f"SELECT {select_list(Assignment, 'a')} FROM {table(Assignment)} a JOIN {table(Hit)} h ON h.id = a.hit_id"
        f" WHERE a.worker_id = %s AND h.campaign_id = %s AND a.status = '{AssignmentStatus.RESERVED.value}'"
        " ORDER BY a.reserved_at, a.id" + (" FOR UPDATE OF a" if locks else "")
    )


def lock_own_reserved(*, worker_id: int, campaign_id: int) -> list[Assignment]:
    rows = fetch_all(_own_reserved_sql(connection.vendor, _locks()), [worker_id, campaign_id])
    return [instances(row, Assignment)[0] for row in rows]


_ACTIVE = ", ".join(f"'{status.value}'" for status in ACTIVE_ASSIGNMENT_STATUSES)


@cache
def _next_hit_sql(vendor: str, locks: bool, skipped: int, unlocked: bool, light_first: bool) -> str:
    assignment, hit_item = table(Assignment), table(HitItem)
    seen_pairs = (
        f"SELECT i2.pair_id FROM {hit_item} i2 JOIN {table(Hit)} h2 ON h2.id = i2.hit_id"
        f" JOIN {assignment} a2 ON a2.hit_id = h2.id WHERE a2.worker_id = %s AND h2.campaign_id = %s"
    )
    skip = f" AND h.id NOT IN ({', '.join(['%s'] * skipped)})" if skipped else ""
    lock = " FOR UPDATE OF h SKIP LOCKED" if locks and not unlocked else ""
    return (
        f"SELECT {select_list(Hit, 'h')} FROM {table(Hit)} h"
        f" WHERE h.campaign_id = %s AND h.has_room AND h.status = '{HitStatus.OPEN.value}'"
        f" AND NOT EXISTS(SELECT 1 FROM {assignment} a WHERE a.hit_id = h.id AND a.worker_id = %s)"
        f" AND NOT EXISTS(SELECT 1 FROM {hit_item} i WHERE i.hit_id = h.id AND i.pair_id IN ({seen_pairs}))"
        f" AND (SELECT COUNT(*) FROM {assignment} a3 WHERE a3.hit_id = h.id AND a3.status IN ({_ACTIVE}))"
        f" < h.assignments_required{skip} ORDER BY h.stage, h.gold_light{' DESC' if light_first else ''},"
        f" h.{connection.ops.quote_name('index')} LIMIT 1{lock}"
    )


def next_hit_with_room(
    *, campaign: Campaign, worker_id: int, skipped: list[int], unlocked: bool = False, light_first: bool = False
) -> Hit | None:
    sql = _next_hit_sql(connection.vendor, _locks(), len(skipped), unlocked, light_first)
    # campaign, worker (not had), worker + campaign (pairs seen), then the skipped HITs
    params = [campaign.pk, worker_id, worker_id, campaign.pk, *skipped]
    row = fetch_one(sql, params)
    if row is None:
        return None
    hit = instances(row, Hit)[0]
    attach(hit, "campaign", campaign)
    return hit


@cache
def _lock_hit_sql(vendor: str, locks: bool) -> str:
    return f"SELECT {select_list(Hit, 'h')} FROM {table(Hit)} h WHERE h.id = %s" + (" FOR UPDATE OF h" if locks else "")


def lock_hit(*, hit_id: int, campaign: Campaign) -> Hit | None:
    """The HIT, locked: waits for whoever holds it, and then reads it as they left it (or None if gone)."""
    row = fetch_one(_lock_hit_sql(connection.vendor, _locks()), [hit_id])
    if row is None:
        return None
    hit = instances(row, Hit)[0]
    attach(hit, "campaign", campaign)
    return hit
