"""Answers on a leased HIT: autosave one item, check what is missing, submit the HIT (gold scoring is queued).

Answers and the submitted state are written under a row lock on the assignment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import cache

from django.db import connection, transaction
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign, HitItem, Scale
from annotator.campaigns.services.budget import campaign_budget_enforce
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.queue import enqueue_on_commit
from annotator.crowd.models.crowd import Answer, Assignment, AssignmentStatus, Choice, Shortcoming, Worker, WrongAspect
from annotator.crowd.rows import fetch_one, table
from annotator.crowd.scales import answer_followups, answer_missing_part, hit_rules
from annotator.crowd.selectors.work import (
    assignment_answer_rows,
    assignment_for_worker,
    hit_item_tokens,
)
from annotator.crowd.services.assignments import (
    assignment_transition,
    check_open_lease,
    lock_own_assignment,
)

MAX_COMMENT_CHARS = 2000
MAX_SECONDS_PER_ITEM = 24 * 3600.0


# The valid values, once: Django's `Choices.values` builds its list on every access.
CHOICE_VALUES = frozenset(Choice.values)
SHORTCOMING_VALUES = frozenset(Shortcoming.values)
WRONG_ASPECT_VALUES = frozenset(WrongAspect.values)


def _clean_answer(
    *,
    campaign: Campaign,
    rules: dict,
    choice: str | None,
    score,
    shortcomings: Iterable[str] | None,
    wrong_aspects: Iterable[str] | None,
    comment: str | None,
) -> dict:
    """Validate one (possibly partial) answer and drop follow-ups that no longer apply (or that the HIT's
    `rules`, `hit_rules` of its stage, do not ask: the second stage of a `both` campaign has its own switch)."""
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
    if choice and choice not in CHOICE_VALUES:
        raise ApplicationError(f"Unknown answer {choice!r}.")
    bad = [value for value in shortcomings if value not in SHORTCOMING_VALUES]
    if bad:
        raise ApplicationError(f"Unknown reason {bad[0]!r}.")
    bad = [value for value in wrong_aspects if value not in WRONG_ASPECT_VALUES]
    if bad:
        raise ApplicationError(f"Unknown aspect {bad[0]!r}.")
    reasons, aspects = answer_followups(rules=rules, choice=choice, shortcomings=shortcomings)
    shortcomings = shortcomings if reasons else []
    wrong_aspects = wrong_aspects if aspects else []
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


_ANSWER_FIELDS = ("item", "choice", "score", "shortcomings", "wrong_aspects", "comment", "seconds_spent", "updated_at")

# The answer is written only while its assignment is still this worker's open lease, checked and locked in
# the same statement: the SELECT's FOR UPDATE waits for a submit holding the row and then re-reads it, so an
# answer never lands on a submitted or expired HIT. On SQLite (no FOR UPDATE) the single writer serialises.
_ANSWER_UPSERT_IF_OPEN = """
    INSERT INTO {answers} (assignment_id, item_id, choice, score, shortcomings, wrong_aspects, comment,
                           seconds_spent, updated_at)
    SELECT a.id, {values} FROM {assignments} a
    WHERE a.id = %s AND a.worker_id = %s AND a.status = %s AND a.expires_at > %s{lock}
    ON CONFLICT (assignment_id, item_id) DO UPDATE SET
        choice = excluded.choice, score = excluded.score, shortcomings = excluded.shortcomings,
        wrong_aspects = excluded.wrong_aspects, comment = excluded.comment, updated_at = excluded.updated_at,
        seconds_spent = CASE WHEN excluded.seconds_spent > {answers}.seconds_spent
                             THEN excluded.seconds_spent ELSE {answers}.seconds_spent END
    RETURNING id, seconds_spent
"""


@cache
def _answer_upsert_sql(vendor: str, locks: bool) -> str:
    fields = [Answer._meta.get_field(name) for name in _ANSWER_FIELDS]
    # PostgreSQL types a bare parameter in a SELECT list as text: say each column's type.
    values = ", ".join(
        f"CAST(%s AS {field.cast_db_type(connection)})" if vendor == "postgresql" else "%s" for field in fields
    )
    return _ANSWER_UPSERT_IF_OPEN.format(
        answers=table(Answer), assignments=table(Assignment), values=values, lock=" FOR UPDATE OF a" if locks else ""
    )


def _write_answer_if_open(
    *, assignment: Assignment, worker: Worker, item_id: int, cleaned: dict, seconds: float | None, now
) -> Answer | None:
    """Insert or replace the answer in one statement (an autosave is most of the traffic) if the assignment
    is still the worker's open lease; None when it no longer is.

    The browser sends the item's cumulative time, so seconds_spent only grows: a stale tab never lowers it.
    PostgreSQL and SQLite both speak INSERT ... SELECT ... ON CONFLICT ... RETURNING; the unique constraint
    on (assignment, item) is the conflict target.
    """
    answer = Answer(
        assignment=assignment, item_id=item_id, **cleaned, seconds_spent=seconds or 0.0, updated_at=timezone.now()
    )
    params = [
        field.get_db_prep_save(getattr(answer, field.attname), connection)
        for field in (Answer._meta.get_field(name) for name in _ANSWER_FIELDS)
    ]
    params += [assignment.pk, worker.pk, AssignmentStatus.RESERVED.value, now]
    row = fetch_one(_answer_upsert_sql(connection.vendor, connection.features.has_select_for_update_of), params)
    if row is None:
        return None
    answer.pk, answer.seconds_spent = row
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

    One unlocked read of the assignment (with its HIT and campaign) to check and clean the answer, then one
    statement that writes it only while the lease is still open, with FOR UPDATE on the assignment row
    (serialises with submit; no transaction of its own around two statements). Idempotent: saving the same
    answer twice leaves one row (unique assignment+item) with the same content. Follow-ups that no longer
    apply (a reason without a middle answer, an aspect without "wrong way") are dropped.
    """
    now = now or timezone.now()
    # Read without a lock to check and clean the answer; the write below checks the lease again, locked.
    current = assignment_for_worker(worker=worker, assignment_id=assignment.pk)
    if current is None:
        raise ApplicationError("No such assignment.", status=404)
    check_open_lease(current, now)
    item_id = _resolve_token(assignment=current, item_token=item_token)
    cleaned = _clean_answer(
        campaign=current.hit.campaign,
        rules=hit_rules(campaign=current.hit.campaign, stage=current.hit.stage),
        choice=choice,
        score=score,
        shortcomings=shortcomings,
        wrong_aspects=wrong_aspects,
        comment=comment,
    )
    seconds = _clean_seconds(seconds_spent)
    answer = _write_answer_if_open(
        assignment=current, worker=worker, item_id=item_id, cleaned=cleaned, seconds=seconds, now=now
    )
    if answer is None:  # submitted, returned or expired since the read: say which, as the read would have
        current = assignment_for_worker(worker=worker, assignment_id=assignment.pk)
        check_open_lease(current, now)
        raise ApplicationError("This HIT can no longer change.", status=409)
    return answer


def answer_missing(*, campaign: Campaign, answer: Answer | None, stage: str | None = None) -> str | None:
    """What is still missing from one item's answer in a HIT of `stage`, in words; None when it is complete."""
    return answer_missing_part(
        rules=hit_rules(campaign=campaign, stage=stage),
        choice=answer.choice if answer else "",
        score=answer.score if answer else None,
        shortcomings=answer.shortcomings if answer else [],
        wrong_aspects=answer.wrong_aspects if answer else [],
    )


def _missing_items(
    *, campaign: Campaign, item_ids: list[int], answers: dict[int, Answer], stage: str | None = None
) -> list[dict]:
    missing = []
    for number, item_id in enumerate(item_ids, start=1):
        what = answer_missing(campaign=campaign, answer=answers.get(item_id), stage=stage)
        if what:
            missing.append({"item": number, "missing": what})
    return missing


def assignment_missing(*, assignment: Assignment) -> list[dict]:
    """Per incomplete item: its 1-based position in the HIT and what is missing."""
    answers = {answer.item_id: answer for answer in Answer.objects.filter(assignment=assignment)}
    item_ids = list(HitItem.objects.filter(hit_id=assignment.hit_id).order_by("position").values_list("pk", flat=True))
    return _missing_items(
        campaign=assignment.hit.campaign, item_ids=item_ids, answers=answers, stage=assignment.hit.stage
    )


ANSWER_FIELDS = ["choice", "score", "shortcomings", "wrong_aspects", "comment", "seconds_spent", "updated_at"]


def _apply_final_answers(*, assignment: Assignment, entries: list, tokens: dict, stored: dict, now) -> None:
    """Write the answers sent with a submit, in two statements at most: what autosave already stored (the
    usual case) is left alone. Updates `stored` in place. The caller holds the assignment's row lock."""
    to_create, to_update = [], []
    rules = hit_rules(campaign=assignment.hit.campaign, stage=assignment.hit.stage)
    for entry in entries:
        if not isinstance(entry, dict):
            raise ApplicationError("Each answer must be an object.")
        item_id = _resolve_token(
            assignment=assignment, item_token=entry.get("item_token") or entry.get("token"), tokens=tokens
        )
        cleaned = _clean_answer(
            campaign=assignment.hit.campaign,
            rules=rules,
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
        locked = lock_own_assignment(assignment=assignment, worker=worker)
        if locked.status in (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED):
            return locked
        check_open_lease(locked, now)
        tokens = hit_item_tokens(hit=locked.hit)
        stored = {answer.item_id: answer for answer in assignment_answer_rows(assignment_id=locked.pk)}
        if answers:
            _apply_final_answers(assignment=locked, entries=answers, tokens=tokens, stored=stored, now=now)
        missing = _missing_items(
            campaign=locked.hit.campaign, item_ids=list(tokens.values()), answers=stored, stage=locked.hit.stage
        )
        if missing:
            summary = "; ".join(f"item {m['item']}: {m['missing']}" for m in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise ApplicationError(f"Not finished yet - {summary}{more}.", extra={"missing": missing})
        assignment_transition(assignment=locked, target=AssignmentStatus.SUBMITTED, reason="submitted", now=now)
        enqueue_on_commit(task_names.ASSIGNMENT_SCORE, locked.pk)
    # The campaign was read with the lock, inside this transaction: without a budget there is nothing to
    # enforce, and most campaigns have none (a budget set this very moment is enforced at the next submit).
    if locked.hit.campaign.budget_cents is not None:
        campaign_budget_enforce(campaign_id=locked.hit.campaign_id)
    return locked


def _as_list(value) -> list:
    if value in (None, ""):
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise ApplicationError("Reasons and aspects must be lists.")
