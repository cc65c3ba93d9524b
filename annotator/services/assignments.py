"""Leases on HITs: claim, autosave, submit, return, expire. Every transition is kept in AssignmentEvent.

Concurrency model (Postgres): a claim locks the worker row (one claim per worker at a time, so two tabs
get one lease) and then one open Hit row with SELECT ... FOR UPDATE SKIP LOCKED; whoever inserts an
assignment for a HIT holds that HIT's row lock, so a fresh count taken after the lock is exact.
Answers and the submitted state are written under a row lock on the assignment. On SQLite (the embedded
default) there is no SKIP LOCKED; its single writer serialises the same code.
"""

import math
from collections.abc import Iterable

from django.db import connection, transaction
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotator.errors import ApplicationError
from annotator.models import (
    ACTIVE_ASSIGNMENT_STATUSES,
    ASSIGNMENT_TRANSITIONS,
    CHOICES_NEEDING_SHORTCOMINGS,
    Answer,
    Assignment,
    AssignmentEvent,
    AssignmentStatus,
    Campaign,
    CampaignStatus,
    Choice,
    Hit,
    HitItem,
    HitStatus,
    Scale,
    Shortcoming,
    Worker,
    WrongAspect,
)
from annotator.models.state import check_transition
from annotator.queue import enqueue_on_commit
from annotator.selectors.work import hit_item_tokens, worker_is_qualified
from annotator.services.hit_room import assignment_left_active, hit_room_freed, hit_room_recount

SCORE_TASK = "workers.tasks.quality.assignment_score_task"
MAX_COMMENT_CHARS = 2000
MAX_SECONDS_PER_ITEM = 24 * 3600.0
# Statuses that use up one of the worker's max_hits_per_worker (a returned or expired lease does not).
COUNTED_STATUSES = [
    AssignmentStatus.RESERVED,
    AssignmentStatus.SUBMITTED,
    AssignmentStatus.APPROVED,
    AssignmentStatus.REJECTED,
]


def assignment_transition(*, assignment: Assignment, target: str, actor=None, reason: str = "", now=None) -> Assignment:
    """Move an assignment to `target` (checked against ASSIGNMENT_TRANSITIONS) and record the event.

    The one place an assignment's status changes: leases here, decisions in services/quality.py. A decision
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
    assignment.save(update_fields=fields)
    AssignmentEvent.objects.create(
        assignment=assignment, from_status=previous, to_status=target, actor=actor, reason=reason[:1000]
    )
    if assignment_left_active(previous, target):
        hit_room_freed(hit_id=assignment.hit_id)
    return assignment


def _lock_hits(queryset):
    if connection.features.has_select_for_update_skip_locked:
        return queryset.select_for_update(skip_locked=True, of=("self",))
    return queryset


def _can_lock() -> bool:
    return connection.features.has_select_for_update and connection.features.has_select_for_update_of


def _check_worker_may_claim(*, campaign: Campaign, worker: Worker) -> None:
    if campaign.status != CampaignStatus.LIVE:
        raise ApplicationError("This campaign is not taking work right now.", status=409)
    if worker.blocked:
        raise ApplicationError("Your account may not take new HITs.", status=403)
    if worker.soft_blocked:
        raise ApplicationError(
            "Your account is paused from taking new HITs while your recent work is reviewed.", status=403
        )
    if not worker_is_qualified(campaign=campaign, worker=worker):
        raise ApplicationError(
            "Pass this campaign's qualification test first.", extra={"reason": "qualification"}, status=403
        )


def _lease_expiry(campaign: Campaign, now):
    return now + timezone.timedelta(minutes=campaign.lease_minutes)


def _reserve(*, hit: Hit, worker: Worker, now, external_assignment_id=None, reason="claimed") -> Assignment:
    assignment = Assignment.objects.create(
        hit=hit,
        worker=worker,
        status=AssignmentStatus.RESERVED,
        expires_at=_lease_expiry(hit.campaign, now),
        external_assignment_id=external_assignment_id,
    )
    AssignmentEvent.objects.create(
        assignment=assignment, from_status="", to_status=AssignmentStatus.RESERVED, reason=reason
    )
    return assignment


def _expire_own_stale_leases(*, worker: Worker, campaign: Campaign, now) -> Assignment | None:
    """Expire the worker's lapsed leases in the campaign and return the oldest one still running, if any.

    One locked read of the worker's reserved assignments in the campaign (usually none) does both.
    """
    reserved = (
        Assignment.objects.select_for_update()
        .filter(worker=worker, hit__campaign=campaign, status=AssignmentStatus.RESERVED)
        .order_by("reserved_at", "id")
    )
    held = None
    for assignment in reserved:
        if assignment.expires_at <= now:
            assignment_transition(assignment=assignment, target=AssignmentStatus.EXPIRED, reason="lease expired")
        elif held is None:
            held = assignment
    return held


def assignment_claim(*, campaign: Campaign, worker: Worker, now=None) -> Assignment:
    """Hand `worker` the next HIT of a live campaign: a reserved Assignment expiring after lease_minutes.

    Locks: SELECT ... FOR UPDATE on the Worker row (serialises one worker's claims), then SELECT ... FOR
    UPDATE SKIP LOCKED on one open Hit at a time (concurrent claimers take different HITs); the HIT's active
    assignments (reserved, submitted, approved) are recounted under its lock, so a HIT never has more than
    `assignments_required`. When every HIT with room is locked by other claimers at that instant, it waits
    for one (plain FOR UPDATE) rather than answer "none left" while a slot may be free. HITs go in stage,
    then index order, so HITs fill up (and can be aggregated) one after another.
    Never the same HIT twice to one worker (also a unique constraint).
    Idempotent: a worker who already holds an unexpired reserved lease in the campaign gets it back.
    Refuses (4xx ApplicationError) a campaign that is not live, blocked or soft-blocked workers, workers
    without a passed qualification, a worker at max_hits_per_worker, and "no HIT left" (404).
    """
    now = now or timezone.now()
    with transaction.atomic():
        worker = Worker.objects.select_for_update().get(pk=worker.pk)
        campaign = Campaign.objects.get(pk=campaign.pk)
        held = _expire_own_stale_leases(worker=worker, campaign=campaign, now=now)
        if held is not None:
            return held
        _check_worker_may_claim(campaign=campaign, worker=worker)
        if campaign.max_hits_per_worker is not None:
            taken = Assignment.objects.filter(
                worker=worker, hit__campaign=campaign, status__in=COUNTED_STATUSES
            ).count()
            if taken >= campaign.max_hits_per_worker:
                raise ApplicationError(
                    f"You have done the most HITs one person may do in this campaign ({campaign.max_hits_per_worker}).",
                    status=409,
                )
        already_mine = Assignment.objects.filter(hit=OuterRef("pk"), worker=worker)
        candidates = (
            Hit.objects.filter(campaign=campaign, status=HitStatus.OPEN, has_room=True)
            .exclude(Exists(already_mine))
            .order_by("stage", "index")
        )
        full: list[int] = []
        # Each round locks one HIT; a HIT found full after its lock is skipped. Bounded: every round excludes
        # one more HIT, and a full HIT is normally filtered before the lock by the stale-snapshot count.
        active = Assignment.objects.filter(hit=OuterRef("pk"), status__in=ACTIVE_ASSIGNMENT_STATUSES)
        for _ in range(50):
            with_room = (
                candidates.exclude(pk__in=full)
                .alias(active_n=_active_count_expression(active))
                .filter(active_n__lt=F("assignments_required"))
            )
            hit = _lock_hits(with_room).first()
            if hit is None:
                # Every HIT with room may be locked by other claimers right now: wait for one instead of
                # answering "none left" while a slot may still be free (checked again under the lock).
                hit = with_room.select_for_update(of=("self",)).first() if _can_lock() else None
            if hit is None:
                break
            if hit_room_recount(hit=hit, adding=1) >= hit.assignments_required:
                full.append(hit.pk)
                continue
            hit.campaign = campaign
            return _reserve(hit=hit, worker=worker, now=now)
        raise ApplicationError("There is no HIT left for you in this campaign right now.", status=404)


def _active_count_expression(active_subquery):
    """The HIT's active assignments as a correlated COUNT (no GROUP BY, so FOR UPDATE is allowed)."""
    counted = active_subquery.order_by().values("hit_id").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


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
        _check_worker_may_claim(campaign=hit.campaign, worker=worker)
        if hit_room_recount(hit=hit, adding=1) >= hit.assignments_required:
            raise ApplicationError("This HIT has all the answers it needs.", status=409)
        return _reserve(
            hit=hit, worker=worker, now=now, external_assignment_id=external_assignment_id, reason="accepted on MTurk"
        )


def _lock_own_assignment(*, assignment: Assignment, worker: Worker) -> Assignment:
    queryset = Assignment.objects.filter(pk=assignment.pk)
    if connection.features.has_select_for_update_of:
        # Lock only the assignment row; the HIT and campaign come along in the same query.
        queryset = queryset.select_related("hit__campaign").select_for_update(of=("self",))
    elif connection.features.has_select_for_update:
        queryset = queryset.select_for_update()  # no OF: a join would lock the HIT and the campaign too
    else:
        queryset = queryset.select_related("hit__campaign")  # SQLite: its single writer serialises
    locked = queryset.first()
    if locked is None or locked.worker_id != worker.pk:
        raise ApplicationError("No such assignment.", status=404)
    return locked


def _check_open_lease(assignment: Assignment, now) -> None:
    if assignment.status != AssignmentStatus.RESERVED:
        raise ApplicationError(
            f"This HIT is {assignment.get_status_display().lower()}; it can no longer change.", status=409
        )
    if assignment.expires_at <= now:
        raise ApplicationError("Your lease on this HIT has expired.", status=409)


def _clean_answer(
    *,
    campaign: Campaign,
    choice: str | None,
    score,
    shortcomings: Iterable[str] | None,
    wrong_aspects: Iterable[str] | None,
    comment: str | None,
) -> dict:
    """Validate one (possibly partial) answer and drop follow-ups that no longer apply."""
    choice = (choice or "").strip()
    shortcomings = list(dict.fromkeys(shortcomings or []))
    wrong_aspects = list(dict.fromkeys(wrong_aspects or []))
    comment = (comment or "").strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise ApplicationError(f"A comment may have at most {MAX_COMMENT_CHARS} characters.")
    if campaign.scale == Scale.SIMILARITY:
        if score in (None, ""):
            score = None
        else:
            try:
                score = float(score)
            except (TypeError, ValueError):
                raise ApplicationError("The similarity must be a number from 0 to 5.") from None
            if not math.isfinite(score) or not 0.0 <= score <= 5.0:
                raise ApplicationError("The similarity must be a number from 0 to 5.")
        return {"choice": "", "score": score, "shortcomings": [], "wrong_aspects": [], "comment": comment}
    if choice and choice not in Choice.values:
        raise ApplicationError(f"Unknown answer {choice!r}.")
    bad = [value for value in shortcomings if value not in Shortcoming.values]
    if bad:
        raise ApplicationError(f"Unknown reason {bad[0]!r}.")
    bad = [value for value in wrong_aspects if value not in WrongAspect.values]
    if bad:
        raise ApplicationError(f"Unknown aspect {bad[0]!r}.")
    if not (campaign.rationale_followups and choice in CHOICES_NEEDING_SHORTCOMINGS):
        shortcomings = []
    if Shortcoming.WRONG_WAY not in shortcomings:
        wrong_aspects = []
    return {
        "choice": choice,
        "score": None,
        "shortcomings": shortcomings,
        "wrong_aspects": wrong_aspects,
        "comment": comment,
    }


def _clean_seconds(seconds_spent) -> float | None:
    if seconds_spent in (None, ""):
        return None
    try:
        seconds = float(seconds_spent)
    except (TypeError, ValueError):
        raise ApplicationError("seconds_spent must be a number.") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ApplicationError("seconds_spent must be a non-negative number.")
    return min(seconds, MAX_SECONDS_PER_ITEM)


_ANSWER_UPSERT = """
    INSERT INTO {table} (assignment_id, item_id, choice, score, shortcomings, wrong_aspects, comment,
                         seconds_spent, updated_at)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (assignment_id, item_id) DO UPDATE SET
        choice = excluded.choice, score = excluded.score, shortcomings = excluded.shortcomings,
        wrong_aspects = excluded.wrong_aspects, comment = excluded.comment, updated_at = excluded.updated_at,
        seconds_spent = CASE WHEN excluded.seconds_spent > {table}.seconds_spent
                             THEN excluded.seconds_spent ELSE {table}.seconds_spent END
    RETURNING id, seconds_spent
"""


def _write_answer(*, assignment: Assignment, item_id: int, cleaned: dict, seconds: float | None) -> Answer:
    """Insert or replace the answer in one statement (an autosave is most of the traffic).

    The browser sends the item's cumulative time, so seconds_spent only grows: a stale tab never lowers it.
    PostgreSQL and SQLite both speak INSERT ... ON CONFLICT ... RETURNING; the unique constraint on
    (assignment, item) is the conflict target.
    """
    answer = Answer(
        assignment=assignment, item_id=item_id, **cleaned, seconds_spent=seconds or 0.0, updated_at=timezone.now()
    )
    fields = [
        Answer._meta.get_field(name)
        for name in (
            "assignment",
            "item",
            "choice",
            "score",
            "shortcomings",
            "wrong_aspects",
            "comment",
            "seconds_spent",
            "updated_at",
        )
    ]
    params = [field.get_db_prep_save(getattr(answer, field.attname), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(_ANSWER_UPSERT.format(table=connection.ops.quote_name(Answer._meta.db_table)), params)
        answer.pk, answer.seconds_spent = cursor.fetchone()
    return answer


def _resolve_token(*, assignment: Assignment, item_token: str, tokens: dict | None = None) -> int:
    tokens = tokens if tokens is not None else hit_item_tokens(hit=assignment.hit)
    item_id = tokens.get(str(item_token or ""))
    if item_id is None:
        raise ApplicationError("That item is not part of this HIT.", status=400)
    return item_id


def answer_save(
    *,
    assignment: Assignment,
    worker: Worker,
    item_token: str,
    choice: str | None = "",
    score=None,
    shortcomings: Iterable[str] | None = None,
    wrong_aspects: Iterable[str] | None = None,
    comment: str | None = "",
    seconds_spent=None,
    now=None,
) -> Answer:
    """Autosave one item of a reserved, unexpired assignment owned by `worker` (partial answers allowed).

    Takes SELECT ... FOR UPDATE on the assignment (serialises with submit). Idempotent: saving the same
    answer twice leaves one row (unique assignment+item) with the same content. Follow-ups that no longer
    apply (a reason without a middle answer, an aspect without "wrong way") are dropped.
    """
    now = now or timezone.now()
    with transaction.atomic():
        locked = _lock_own_assignment(assignment=assignment, worker=worker)
        _check_open_lease(locked, now)
        item_id = _resolve_token(assignment=locked, item_token=item_token)
        cleaned = _clean_answer(
            campaign=locked.hit.campaign,
            choice=choice,
            score=score,
            shortcomings=shortcomings,
            wrong_aspects=wrong_aspects,
            comment=comment,
        )
        return _write_answer(assignment=locked, item_id=item_id, cleaned=cleaned, seconds=_clean_seconds(seconds_spent))


def answer_missing(*, campaign: Campaign, answer: Answer | None) -> str | None:
    """What is still missing from one item's answer, in words; None when it is complete."""
    if campaign.scale == Scale.SIMILARITY:
        return None if answer is not None and answer.score is not None else "a similarity rating"
    if answer is None or not answer.choice:
        return "an answer"
    if campaign.rationale_followups and answer.choice in CHOICES_NEEDING_SHORTCOMINGS:
        if not answer.shortcomings:
            return "a reason (what is wrong with the description)"
        if Shortcoming.WRONG_WAY in answer.shortcomings and not answer.wrong_aspects:
            return "what is described in a wrong way"
    return None


def _missing_items(*, campaign: Campaign, item_ids: list[int], answers: dict[int, Answer]) -> list[dict]:
    missing = []
    for number, item_id in enumerate(item_ids, start=1):
        what = answer_missing(campaign=campaign, answer=answers.get(item_id))
        if what:
            missing.append({"item": number, "missing": what})
    return missing


def assignment_missing(*, assignment: Assignment) -> list[dict]:
    """Per incomplete item: its 1-based position in the HIT and what is missing."""
    answers = {answer.item_id: answer for answer in Answer.objects.filter(assignment=assignment)}
    item_ids = list(HitItem.objects.filter(hit_id=assignment.hit_id).order_by("position").values_list("pk", flat=True))
    return _missing_items(campaign=assignment.hit.campaign, item_ids=item_ids, answers=answers)


ANSWER_FIELDS = ["choice", "score", "shortcomings", "wrong_aspects", "comment", "seconds_spent", "updated_at"]


def _apply_final_answers(*, assignment: Assignment, entries: list, tokens: dict, stored: dict, now) -> None:
    """Write the answers sent with a submit, in two statements at most: what autosave already stored (the
    usual case) is left alone. Updates `stored` in place. The caller holds the assignment's row lock."""
    to_create, to_update = [], []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ApplicationError("Each answer must be an object.")
        item_id = _resolve_token(
            assignment=assignment, item_token=entry.get("item_token") or entry.get("token"), tokens=tokens
        )
        cleaned = _clean_answer(
            campaign=assignment.hit.campaign,
            choice=entry.get("choice"),
            score=entry.get("score"),
            shortcomings=_as_list(entry.get("shortcomings")),
            wrong_aspects=_as_list(entry.get("wrong_aspects")),
            comment=entry.get("comment"),
        )
        seconds = _clean_seconds(entry.get("seconds_spent"))
        answer = stored.get(item_id)
        if answer is None:
            answer = Answer(
                assignment=assignment, item_id=item_id, **cleaned, seconds_spent=seconds or 0.0, updated_at=now
            )
            stored[item_id] = answer
            to_create.append(answer)
            continue
        changed = any(getattr(answer, field) != value for field, value in cleaned.items())
        if seconds is not None and seconds > (answer.seconds_spent or 0.0):
            answer.seconds_spent, changed = seconds, True
        if changed:
            for field, value in cleaned.items():
                setattr(answer, field, value)
            answer.updated_at = now
            if answer.pk is not None and answer not in to_update:  # a new one is created with its last state
                to_update.append(answer)
    if to_create:
        Answer.objects.bulk_create(to_create)
    if to_update:
        Answer.objects.bulk_update(to_update, ANSWER_FIELDS)


def assignment_submit(
    *, assignment: Assignment, worker: Worker, answers: list[dict] | None = None, now=None
) -> Assignment:
    """Submit a HIT: optional last answers (dicts with item_token, choice, ...) + completeness + `submitted`.

    One transaction with SELECT ... FOR UPDATE on the assignment: the answers and the new status commit
    together; gold scoring (workers.tasks.quality.assignment_score_task) is queued after commit.
    Idempotent: a double click, a retry or a second tab gets the already submitted assignment back and
    queues nothing more. Incomplete work is refused (400) with `extra["missing"]` saying what is missing.
    """
    now = now or timezone.now()
    with transaction.atomic():
        locked = _lock_own_assignment(assignment=assignment, worker=worker)
        if locked.status in (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED):
            return locked
        _check_open_lease(locked, now)
        tokens = hit_item_tokens(hit=locked.hit)
        stored = {answer.item_id: answer for answer in Answer.objects.filter(assignment=locked)}
        if answers:
            _apply_final_answers(assignment=locked, entries=answers, tokens=tokens, stored=stored, now=now)
        missing = _missing_items(campaign=locked.hit.campaign, item_ids=list(tokens.values()), answers=stored)
        if missing:
            summary = "; ".join(f"item {m['item']}: {m['missing']}" for m in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise ApplicationError(f"Not finished yet - {summary}{more}.", extra={"missing": missing})
        assignment_transition(assignment=locked, target=AssignmentStatus.SUBMITTED, reason="submitted", now=now)
        enqueue_on_commit(SCORE_TASK, locked.pk)
        return locked


def _as_list(value) -> list:
    if value in (None, ""):
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise ApplicationError("Reasons and aspects must be lists.")


def assignment_return(*, assignment: Assignment, worker: Worker) -> Assignment:
    """The worker gives the HIT back: reserved -> returned (kept, with its answers); the HIT is re-offered.

    Takes SELECT ... FOR UPDATE on the assignment. Idempotent: returning a returned assignment is a no-op.
    """
    with transaction.atomic():
        locked = _lock_own_assignment(assignment=assignment, worker=worker)
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
