"""Leases on HITs: claim, return, expire; the one assignment state machine. Every transition is kept in AssignmentEvent.

Concurrency model (Postgres): a claim locks the worker row (one claim per worker at a time, so two tabs
get one lease) and then one open Hit row with SELECT ... FOR UPDATE SKIP LOCKED; whoever inserts an
assignment for a HIT holds that HIT's row lock, so a fresh count taken after the lock is exact.
Answers and the submitted state are written under a row lock on the assignment. On SQLite (the embedded
default) there is no SKIP LOCKED; its single writer serialises the same code.
"""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign, CampaignStatus, Hit, HitItem, HitStatus
from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.crowd.models.crowd import ASSIGNMENT_TRANSITIONS, Assignment, AssignmentEvent, AssignmentStatus, Worker
from annotator.crowd.models.standing import WorkerStanding
from annotator.crowd.rows import (
    attach,
    execute,
    fetch_one,
    ids_fit,
    insert_values,
    instances,
    select_list,
    table,
)
from annotator.crowd.selectors.work import worker_is_qualified
from annotator.crowd.services import claim_queries
from annotator.crowd.services.hit_room import (
    assignment_left_active,
    hit_room_freed,
    hit_room_recount,
)

# Statuses that use up one of the worker's max_hits_per_worker (a returned or expired lease does not).
COUNTED_STATUSES = [
    AssignmentStatus.RESERVED,
    AssignmentStatus.SUBMITTED,
    AssignmentStatus.APPROVED,
    AssignmentStatus.REJECTED,
]


def assignment_transition(*, assignment: Assignment, target: str, actor=None, reason: str = "", now=None) -> Assignment:
    """Move an assignment to `target` (checked against ASSIGNMENT_TRANSITIONS) and record the event.

    The one place an assignment's status changes: leases here, decisions in services/quality/decisions.py. A decision
    (approved, rejected) stamps decided_at and cancels a pending auto-approval; an assignment that stops
    counting against its HIT's redundancy offers the slot to claims again (Hit.has_room).
    The caller holds the assignment's row lock inside a transaction.
    """
    check_transition(transitions=ASSIGNMENT_TRANSITIONS, current=assignment.status, target=target, what="assignment")
    previous = assignment.status
    assignment.status = target
    fields = ["status"]
    if target == AssignmentStatus.SUBMITTED:
        assignment.submitted_at = now or timezone.now()
        fields.append("submitted_at")
    if target in (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED):
        assignment.decided_at = now or timezone.now()
        assignment.auto_approve_at = None
        fields += ["decided_at", "auto_approve_at"]
    event = AssignmentEvent(
        assignment=assignment, from_status=previous, to_status=target, actor=actor, reason=reason[:1000]
    )
    if connection.vendor == "postgresql":
        _save_with_event(assignment=assignment, fields=fields, event=event)
    else:
        assignment.save(update_fields=fields)
        event.save(force_insert=True)
    if assignment_left_active(previous, target):
        hit_room_freed(hit_id=assignment.hit_id)
    return assignment


@cache
def _save_with_event_sql(fields: tuple[str, ...], event_columns: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    columns = [Assignment._meta.get_field(name).column for name in fields]
    return (
        f"WITH moved AS (UPDATE {table(Assignment)} SET {', '.join(f'{quote(c)} = %s' for c in columns)}"
        f" WHERE id = %s RETURNING id) INSERT INTO {table(AssignmentEvent)} ({', '.join(map(quote, event_columns))})"
        f" SELECT {', '.join(['%s'] * len(event_columns))} FROM moved"
    )


def _save_with_event(*, assignment: Assignment, fields: list[str], event: AssignmentEvent) -> None:
    """PostgreSQL: the assignment's changed fields and its event in one statement (a submit's two writes;
    building them with the ORM cost about 1 ms of a submit's CPU). The caller holds the row lock."""
    values = [
        Assignment._meta.get_field(name).get_db_prep_save(getattr(assignment, name), connection) for name in fields
    ]
    event_columns, event_values = insert_values(event)
    if execute(_save_with_event_sql(tuple(fields), event_columns), [*values, assignment.pk, *event_values]) != 1:
        raise ApplicationError("No such assignment.", status=404)


@cache
def _reserve_sql(columns: tuple[str, ...], event_columns: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    return (
        f"WITH made AS (INSERT INTO {table(Assignment)} ({', '.join(map(quote, columns))})"
        f" VALUES ({', '.join(['%s'] * len(columns))}) RETURNING id),"
        f" event AS (INSERT INTO {table(AssignmentEvent)} (assignment_id, {', '.join(map(quote, event_columns))})"
        f" SELECT id, {', '.join(['%s'] * len(event_columns))} FROM made) SELECT id FROM made"
    )


def _insert_with_event(*, assignment: Assignment, event: AssignmentEvent) -> Assignment:
    """PostgreSQL: a new assignment and its first event in one statement, as the ORM would write them."""
    columns, values = insert_values(assignment)
    event_columns, event_values = insert_values(event)
    # The event's assignment comes from the INSERT it follows.
    keep = [index for index, column in enumerate(event_columns) if column != "assignment_id"]
    event_columns = tuple(event_columns[index] for index in keep)
    event_values = [event_values[index] for index in keep]
    assignment.pk = fetch_one(_reserve_sql(columns, event_columns), [*values, *event_values])[0]
    assignment._state.adding, assignment._state.db = False, connection.alias
    return assignment


def _can_lock() -> bool:
    return connection.features.has_select_for_update and connection.features.has_select_for_update_of


# The campaigns a worker may open (work_campaign, work_claim); others do not exist for them.
WORKER_VISIBLE_CAMPAIGN_STATUSES = (CampaignStatus.LIVE, CampaignStatus.PAUSED, CampaignStatus.FINISHED)


def _claim_standing(*, campaign: Campaign, worker: Worker) -> claim_queries.ClaimStanding:
    """The worker's standing with the owner read with the ORM, where no locking read brought it (MTurk)."""
    standing = WorkerStanding.objects.filter(requester_id=campaign.owner_id, worker=worker).first()
    if standing is None:
        return claim_queries.ClaimStanding()
    return claim_queries.ClaimStanding(
        blocked=standing.blocked, soft_blocked=standing.soft_blocked, gold_clean_streak=standing.gold_clean_streak
    )


def _check_worker_may_claim(*, campaign: Campaign, worker: Worker, standing: claim_queries.ClaimStanding) -> None:
    if campaign.status != CampaignStatus.LIVE:
        raise ApplicationError("This campaign is not taking work right now.", status=409)
    if worker.blocked:  # a platform block, by staff
        raise ApplicationError("Your account may not take new HITs.", status=403)
    # The campaign owner's own decision about this worker; another requester's block does not count here.
    if standing.blocked:
        raise ApplicationError("Your account may not take new HITs on this requester's campaigns.", status=403)
    if standing.soft_blocked:
        raise ApplicationError(
            "Your account is paused from taking new HITs while your recent work is reviewed.", status=403
        )
    if not standing.passed_qualification and not worker_is_qualified(campaign=campaign, worker=worker):
        raise ApplicationError(
            "Pass this campaign's qualification test first.", extra={"reason": "qualification"}, status=403
        )


def _prefers_gold_light(campaign: Campaign, standing: claim_queries.ClaimStanding) -> bool:
    """Adaptive gold: whether the worker's clean gold streak with the owner (read with the worker's row lock)
    calls for gold-light HITs first. Only campaigns that build them ask."""
    if campaign.gold_light_share <= 0:
        return False
    return standing.gold_clean_streak >= settings.QUALITY_GOLD_LIGHT_AFTER


def _lease_expiry(campaign: Campaign, now):
    return now + timezone.timedelta(minutes=campaign.lease_minutes)


def _reserve(*, hit: Hit, worker: Worker, now, external_assignment_id=None, reason="claimed") -> Assignment:
    assignment = Assignment(
        hit=hit,
        worker=worker,
        status=AssignmentStatus.RESERVED,
        expires_at=_lease_expiry(hit.campaign, now),
        external_assignment_id=external_assignment_id,
    )
    if connection.vendor == "postgresql":
        event = AssignmentEvent(from_status="", to_status=AssignmentStatus.RESERVED, reason=reason)
        return _insert_with_event(assignment=assignment, event=event)
    assignment.save(force_insert=True)
    AssignmentEvent.objects.create(
        assignment=assignment, from_status="", to_status=AssignmentStatus.RESERVED, reason=reason
    )
    return assignment


def _expire_own_stale_leases(*, worker: Worker, campaign: Campaign, now) -> Assignment | None:
    """Expire the worker's lapsed leases in the campaign and return the oldest one still running, if any.

    One locked read of the worker's reserved assignments in the campaign (usually none) does both.
    """
    held = None
    for assignment in claim_queries.lock_own_reserved(worker_id=worker.pk, campaign_id=campaign.pk):
        if assignment.expires_at <= now:
            assignment_transition(assignment=assignment, target=AssignmentStatus.EXPIRED, reason="lease expired")
        elif held is None:
            held = assignment
    return held


def assignment_claim(*, campaign: Campaign, worker: Worker, now=None) -> Assignment:
    """Hand `worker` the next HIT of a live campaign: a reserved Assignment expiring after lease_minutes.

    Locks: SELECT ... FOR UPDATE on the Worker row (serialises one worker's claims), then SELECT ... FOR UPDATE SKIP
    LOCKED on one open Hit at a time (concurrent claimers take different HITs); the HIT's active assignments
    (reserved, submitted, approved) are recounted under its lock, so a HIT never has more than
    `assignments_required`. When every HIT with room is locked by other claimers at that instant, it waits for one
    (picked unlocked, then FOR UPDATE by id: one row, once per claim, while it holds no other HIT's lock, so no
    deadlock) rather than answer "none left" while a slot may be free. HITs go in stage, then index order, so HITs
    fill up (and can be aggregated) one after another.
    Adaptive gold: within a stage, a worker whose gold answers with the campaign's owner were right
    QUALITY_GOLD_LIGHT_AFTER times in a row since their last miss gets the gold-light HITs first, anyone else (new,
    or after a miss) the full-gold ones first; either falls back to the other kind, so nobody is refused work for
    it.
    Never the same HIT twice to one worker (also a unique constraint), and never a HIT holding a pair the
    worker was shown in another HIT (a repeated pair would mark itself as gold).
    Idempotent: a worker who already holds an unexpired reserved lease in the campaign gets it back.
    Refuses (4xx ApplicationError) a campaign that is not live, a worker blocked on the platform or
    blocked or soft-blocked by the campaign's owner, workers
    without a passed qualification, a worker at max_hits_per_worker, and "no HIT left" (404).
    """
    now = now or timezone.now()
    with transaction.atomic():
        # One read locks the worker and brings the campaign (callers may pass Campaign(pk=...)) with the
        # owner's standing and the qualification: a draft or an unknown id is 404.
        worker, campaign, standing = claim_queries.lock_worker_with_campaign(
            worker_id=worker.pk, campaign_id=campaign.pk
        )
        if worker is None:
            raise ApplicationError("No such worker.", status=404)
        if campaign is None or campaign.status not in WORKER_VISIBLE_CAMPAIGN_STATUSES:
            raise ApplicationError("No such campaign.", status=404, extra={"reason": "no_campaign"})
        held = _expire_own_stale_leases(worker=worker, campaign=campaign, now=now)
        if held is not None:
            return held
        _check_worker_may_claim(campaign=campaign, worker=worker, standing=standing)
        if campaign.max_hits_per_worker is not None:
            taken = Assignment.objects.filter(
                worker=worker, hit__campaign=campaign, status__in=COUNTED_STATUSES
            ).count()
            if taken >= campaign.max_hits_per_worker:
                raise ApplicationError(
                    f"You have done the most HITs one person may do in this campaign ({campaign.max_hits_per_worker}).",
                    status=409,
                )
        light_first = _prefers_gold_light(campaign, standing)
        full: list[int] = []
        # Each round locks one HIT; a HIT found full after its lock is skipped. Bounded: every round excludes
        # one more HIT, and a full HIT is normally filtered before the lock by the stale-snapshot count.
        for _ in range(50):
            hit = claim_queries.next_hit_with_room(
                campaign=campaign, worker_id=worker.pk, skipped=full, light_first=light_first
            )
            if hit is None and _can_lock() and not full:
                hit = _wait_for_one_hit(campaign=campaign, worker=worker, light_first=light_first)
            if hit is None:
                break
            if hit.status != HitStatus.OPEN or hit_room_recount(hit=hit, adding=1) >= hit.assignments_required:
                full.append(hit.pk)
                continue
            return _reserve(hit=hit, worker=worker, now=now)
        raise ApplicationError("There is no HIT left for you in this campaign right now.", status=404)


def _wait_for_one_hit(*, campaign: Campaign, worker: Worker, light_first: bool) -> Hit | None:
    """Every HIT with room may be locked by other claimers right now: wait for one instead of answering
    "none left" while a slot may still be free. Called only while the claim holds no HIT's lock, and at most
    once per claim.

    The first candidate is picked without a lock, then locked by id: the claim waits for that one row and
    holds nothing else meanwhile. (A plain `FOR UPDATE ... LIMIT 1` kept the lock of a HIT it found full
    after waiting and went on to wait for the next one: beside a transaction holding that next HIT and
    freeing a slot of the first, a deadlock; tests/annotator/crowd/test_assignment_claim_concurrency.py.)
    The caller checks the locked HIT again (open, room) as for any other.
    """
    candidate = claim_queries.next_hit_with_room(
        campaign=campaign, worker_id=worker.pk, skipped=[], unlocked=True, light_first=light_first
    )
    if candidate is None:
        return None
    return claim_queries.lock_hit(hit_id=candidate.pk, campaign=campaign)


def assignment_pairs_seen(*, hit: Hit, worker: Worker) -> bool:
    """Whether `hit` holds a pair `worker` was shown in another HIT of its campaign."""
    seen = HitItem.objects.filter(hit__campaign_id=hit.campaign_id, hit__assignments__worker=worker).exclude(hit=hit)
    return HitItem.objects.filter(hit=hit, pair_id__in=seen.values("pair_id")).exists()


def assignment_claim_external(*, hit: Hit, worker: Worker, external_assignment_id: str, now=None) -> Assignment:
    """The lease for an MTurk assignment on a given HIT (MTurk already chose the HIT and the worker).

    Locks the Hit row (FOR UPDATE). Idempotent on external_assignment_id: the same MTurk assignment gets
    the same Assignment back; a worker's existing lease on that HIT is returned too.
    """
    now = now or timezone.now()
    external_assignment_id = (external_assignment_id or "").strip()
    if not external_assignment_id or len(external_assignment_id) > 64:
        raise ApplicationError("The assignment id is missing or malformed.")
    with transaction.atomic():
        hit = Hit.objects.select_for_update().select_related("campaign").get(pk=hit.pk)
        existing = Assignment.objects.filter(external_assignment_id=external_assignment_id).first()
        if existing is not None:
            if existing.worker_id != worker.pk or existing.hit_id != hit.pk:
                raise ApplicationError("This assignment belongs to someone else.", status=403)
            return existing
        mine = Assignment.objects.filter(hit=hit, worker=worker).first()
        if mine is not None:
            if mine.status == AssignmentStatus.RESERVED and mine.expires_at > now:
                return mine
            raise ApplicationError("You have already worked on this HIT.", status=409)
        standing = _claim_standing(campaign=hit.campaign, worker=worker)
        _check_worker_may_claim(campaign=hit.campaign, worker=worker, standing=standing)
        if assignment_pairs_seen(hit=hit, worker=worker):
            # MTurk chose the HIT; a pair seen twice would give its gold away. The worker returns it there.
            raise ApplicationError(
                "You have already worked on items of this HIT; please return it on Mechanical Turk.", status=409
            )
        if hit_room_recount(hit=hit, adding=1) >= hit.assignments_required:
            raise ApplicationError("This HIT has all the answers it needs.", status=409)
        return _reserve(
            hit=hit, worker=worker, now=now, external_assignment_id=external_assignment_id, reason="accepted on MTurk"
        )


@cache
def _locked_assignment_sql(vendor: str, lock_clause: str) -> str:
    return (
        f"SELECT {select_list(Assignment, 'a')}, {select_list(Hit, 'h')}, {select_list(Campaign, 'c')}"
        f" FROM {table(Assignment)} a JOIN {table(Hit)} h ON h.id = a.hit_id"
        f" JOIN {table(Campaign)} c ON c.id = h.campaign_id WHERE a.id = %s{lock_clause}"
    )


def lock_own_assignment(*, assignment: Assignment, worker: Worker) -> Assignment:
    """The worker's assignment with its HIT and campaign, the assignment row locked (PostgreSQL: FOR UPDATE OF
    the assignment only; SQLite's single writer serialises without one). One query, written as SQL
    (`annotator.crowd.rows`): an autosave runs it for every item. 404 unless it is this worker's."""
    if not connection.in_atomic_block:
        raise TransactionManagementError("lock_own_assignment locks a row: call it inside transaction.atomic().")
    if not ids_fit(assignment.pk):
        raise ApplicationError("No such assignment.", status=404)
    lock_clause = " FOR UPDATE OF a" if connection.features.has_select_for_update_of else ""
    row = fetch_one(_locked_assignment_sql(connection.vendor, lock_clause), [assignment.pk])
    if row is None:
        raise ApplicationError("No such assignment.", status=404)
    locked, hit, campaign = instances(row, Assignment, Hit, Campaign)
    if locked.worker_id != worker.pk:
        raise ApplicationError("No such assignment.", status=404)
    attach(hit, "campaign", campaign)
    attach(locked, "hit", hit)
    return locked


def check_open_lease(assignment: Assignment, now) -> None:
    if assignment.status != AssignmentStatus.RESERVED:
        raise ApplicationError(
            f"This HIT is {assignment.get_status_display().lower()}; it can no longer change.", status=409
        )
    if assignment.expires_at <= now:
        raise ApplicationError("Your lease on this HIT has expired.", status=409)


def assignment_return(*, assignment: Assignment, worker: Worker) -> Assignment:
    """The worker gives the HIT back: reserved -> returned (kept, with its answers); the HIT is re-offered.

    Takes SELECT ... FOR UPDATE on the assignment. Idempotent: returning a returned assignment is a no-op.
    """
    with transaction.atomic():
        locked = lock_own_assignment(assignment=assignment, worker=worker)
        if locked.status == AssignmentStatus.RETURNED:
            return locked
        return assignment_transition(assignment=locked, target=AssignmentStatus.RETURNED, reason="returned by worker")


def assignments_expire(*, now=None, batch_size: int = 500) -> int:
    """Mark reserved leases past their expiry as `expired` (kept, never deleted); returns how many.

    Locks each batch with SELECT ... FOR UPDATE SKIP LOCKED, so it runs beside claims, saves and submits
    (a lease being submitted right now is skipped and either submitted or expired next time). Idempotent.
    """
    now = now or timezone.now()
    expired = 0
    while True:
        with transaction.atomic():
            # In HIT order: each expiry frees a slot under the HIT's row lock, and two batches that take
            # those locks in the same order cannot deadlock.
            queryset = Assignment.objects.filter(status=AssignmentStatus.RESERVED, expires_at__lte=now).order_by(
                "hit_id", "id"
            )
            if connection.features.has_select_for_update_skip_locked:
                queryset = queryset.select_for_update(skip_locked=True)
            batch = list(queryset[:batch_size])
            for assignment in batch:
                assignment_transition(assignment=assignment, target=AssignmentStatus.EXPIRED, reason="lease expired")
        expired += len(batch)
        if len(batch) < batch_size:
            return expired
