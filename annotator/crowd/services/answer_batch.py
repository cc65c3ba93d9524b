"""Autosave in batches: the answers hit.js has not had acknowledged yet, written in one statement.

A HIT page used to send one request per changed item (18 autosaves a HIT, most of what serving a HIT cost).
hit.js now sends the items changed since the last acknowledgement together: a few items or a few seconds
after the last change, when the page is hidden or closed (`navigator.sendBeacon`) and with the submit.
`answers_save` checks and cleans every entry as `answer_save` does one, then writes them all with one
INSERT ... SELECT ... ON CONFLICT that takes the assignment's row lock and checks its lease in the same
statement. Idempotent per item: an entry sent twice (a beacon and a retry) leaves one row with its content.
"""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.crowd.models.crowd import Answer, Assignment, AssignmentStatus, Worker
from annotator.crowd.rows import fetch_all, table
from annotator.crowd.scales import answer_missing_part, hit_rules
from annotator.crowd.selectors.work import assignment_for_worker, hit_item_tokens
from annotator.crowd.services.answers import (
    _ANSWER_FIELDS,
    _clean_answer,
    _clean_seconds,
    _resolve_token,
)
from annotator.crowd.services.assignments import check_open_lease

# More than any HIT holds (18 items): a bigger batch is not from hit.js.
MAX_BATCH = 100

_BATCH_UPSERT_IF_OPEN = """
    INSERT INTO {answers} (assignment_id, {columns})
    SELECT a.id, {picked} FROM {assignments} a, (VALUES {rows}) v
    WHERE a.id = %s AND a.worker_id = %s AND a.status = %s AND a.expires_at > %s{lock}
    ON CONFLICT (assignment_id, item_id) DO UPDATE SET
        choice = excluded.choice, score = excluded.score, shortcomings = excluded.shortcomings,
        wrong_aspects = excluded.wrong_aspects, comment = excluded.comment, updated_at = excluded.updated_at,
        seconds_spent = CASE WHEN excluded.seconds_spent > {answers}.seconds_spent
                             THEN excluded.seconds_spent ELSE {answers}.seconds_spent END
    RETURNING item_id
"""


@cache
def _batch_upsert_sql(vendor: str, locks: bool, count: int) -> str:
    fields = [Answer._meta.get_field(name) for name in _ANSWER_FIELDS]
    # PostgreSQL types a bare parameter as text: each value says its column's type. VALUES names its
    # columns column1, column2, ... on both PostgreSQL and SQLite.
    one = ", ".join(
        f"CAST(%s AS {field.cast_db_type(connection)})" if vendor == "postgresql" else "%s" for field in fields
    )
    return _BATCH_UPSERT_IF_OPEN.format(
        answers=table(Answer),
        assignments=table(Assignment),
        columns=", ".join(connection.ops.quote_name(field.column) for field in fields),
        picked=", ".join(f"v.column{number}" for number in range(1, len(fields) + 1)),
        rows=", ".join([f"({one})"] * count),
        lock=" FOR UPDATE OF a" if locks else "",
    )


def _cleaned_entries(*, assignment: Assignment, entries) -> dict[int, tuple[str, dict, float | None]]:
    """item id -> (token, cleaned answer, seconds), the last entry of an item winning; 400 on any bad entry."""
    if not isinstance(entries, list) or not entries:
        raise ApplicationError("answers must be a non-empty list.")
    if len(entries) > MAX_BATCH:
        raise ApplicationError(f"At most {MAX_BATCH} answers at a time.")
    campaign = assignment.hit.campaign
    rules = hit_rules(campaign=campaign, stage=assignment.hit.stage)
    tokens = hit_item_tokens(hit=assignment.hit)
    cleaned = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ApplicationError("Each answer must be an object.")
        for key in ("shortcomings", "wrong_aspects"):
            if entry.get(key) is not None and not isinstance(entry.get(key), list):
                raise ApplicationError(f"{key} must be a list.")
        token = str(entry.get("item_token") or "")
        item_id = _resolve_token(assignment=assignment, item_token=token, tokens=tokens)
        answer = _clean_answer(
            campaign=campaign,
            rules=rules,
            choice=entry.get("choice") if isinstance(entry.get("choice"), str) else "",
            score=entry.get("score"),
            shortcomings=entry.get("shortcomings"),
            wrong_aspects=entry.get("wrong_aspects"),
            comment=entry.get("comment") if isinstance(entry.get("comment"), str) else "",
        )
        cleaned[item_id] = (token, answer, _clean_seconds(entry.get("seconds_spent")))
    return cleaned


def answers_save(*, assignment: Assignment, worker: Worker, entries, now=None) -> dict[str, str | None]:
    """Autosave several items of a reserved, unexpired assignment owned by `worker` in one statement.

    `entries` are dicts as `answer_save` takes them (item_token, choice, score, shortcomings, wrong_aspects,
    comment, seconds_spent; partial answers allowed). Every entry is checked first: one bad entry refuses the
    batch (400) and writes nothing. One unlocked read of the assignment, then one INSERT ... SELECT ...
    ON CONFLICT DO UPDATE with FOR UPDATE OF the assignment row (serialises with submit; the lease is
    checked again under the lock, so nothing lands on a submitted or expired HIT). Idempotent per item;
    seconds_spent only grows. Returns, per token written, what the item still misses (None: complete).
    """
    now = now or timezone.now()
    current = assignment_for_worker(worker=worker, assignment_id=assignment.pk)
    if current is None:
        raise ApplicationError("No such assignment.", status=404)
    check_open_lease(current, now)
    cleaned = _cleaned_entries(assignment=current, entries=entries)
    stamp = timezone.now()
    params = []
    for item_id, (_token, answer, seconds) in cleaned.items():
        row = Answer(assignment=current, item_id=item_id, **answer, seconds_spent=seconds or 0.0, updated_at=stamp)
        params += [
            field.get_db_prep_save(getattr(row, field.attname), connection)
            for field in (Answer._meta.get_field(name) for name in _ANSWER_FIELDS)
        ]
    params += [current.pk, worker.pk, AssignmentStatus.RESERVED.value, now]
    locks = connection.features.has_select_for_update_of
    written = fetch_all(_batch_upsert_sql(connection.vendor, locks, len(cleaned)), params)
    if not written:  # submitted, returned or expired since the read: say which, as the read would have
        check_open_lease(assignment_for_worker(worker=worker, assignment_id=assignment.pk), now)
        raise ApplicationError("This HIT can no longer change.", status=409)
    rules = hit_rules(campaign=current.hit.campaign, stage=current.hit.stage)
    return {
        token: answer_missing_part(
            rules=rules,
            choice=answer["choice"],
            score=answer["score"],
            shortcomings=answer["shortcomings"],
            wrong_aspects=answer["wrong_aspects"],
        )
        for token, answer, _seconds in cleaned.values()
    }
