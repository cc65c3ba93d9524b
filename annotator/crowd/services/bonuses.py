"""Bonuses and messages to workers: recorded for local workers, sent to MTurk for MTurk workers.

A bonus is written in its own transaction (`bonus_give`) and, for an MTurk assignment, sent after commit by
the task `workers.tasks.mturk.bonus_send_task` (`bonus_send`) with SendBonus, whose UniqueRequestToken
(the bonus's id) makes MTurk pay it once however often it is tried. A network error or MTurk's own fault is
retried with backoff up to MAX_ATTEMPTS; MTurk refusing the request is final. Messages to MTurk workers go
the same way with NotifyWorkers (`worker_message_send`).
"""

from __future__ import annotations

import logging

from botocore.exceptions import BotoCoreError, ClientError
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign
from annotator.campaigns.services.budget import campaign_budget_enforce
from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_on_commit
from annotator.crowd import mturk
from annotator.crowd.models.crowd import Assignment, AssignmentStatus, Worker
from annotator.crowd.models.money import PAYOUT_TRANSITIONS, Bonus, PayoutStatus, WorkerMessage

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
MAX_BONUS_CENTS = 10_000  # $100: a slip of the keyboard should not pay a worker a month's wage


class PayoutNotSent(Exception):
    """An attempt failed in a way worth another try; the task retries on it with backoff."""


def _set_status(row, target: str) -> None:
    check_transition(transitions=PAYOUT_TRANSITIONS, current=row.status, target=target, what="payout")
    row.status = target


def bonus_give(
    *, campaign: Campaign, assignment: Assignment, amount_cents: int, reason: str, idempotency_key: str, actor=None
) -> Bonus:
    """Give the worker of an approved assignment of `campaign` a bonus; the caller checked that `actor` may
    manage the campaign. Returns the existing bonus for a repeated (assignment, idempotency_key).

    Refuses (400) an amount outside 1..MAX_BONUS_CENTS, an empty reason or key, and (409) an assignment
    of another campaign or not approved. An MTurk assignment's bonus is sent after commit. The bonus counts
    in the campaign's spend and may pause it at its budget.
    """
    reason = (reason or "").strip()
    key = (idempotency_key or "").strip()
    if not isinstance(amount_cents, int) or not 1 <= amount_cents <= MAX_BONUS_CENTS:
        raise ApplicationError(f"A bonus is between 1 and {MAX_BONUS_CENTS} cents.")
    if not reason:
        raise ApplicationError("Give a reason for the bonus; the worker sees it.")
    if not key or len(key) > 64:
        raise ApplicationError("Give an idempotency key of 1 to 64 characters, the same for a repeated request.")
    with transaction.atomic():
        locked = Assignment.objects.select_for_update(of=("self",)).select_related("hit").get(pk=assignment.pk)
        if locked.hit.campaign_id != campaign.pk:
            raise ApplicationError("That assignment is not part of this campaign.", status=409)
        existing = Bonus.objects.filter(assignment=locked, idempotency_key=key).first()
        if existing is not None:
            return existing
        if locked.status != AssignmentStatus.APPROVED:
            raise ApplicationError("Only approved work can get a bonus.", status=409)
        external = bool(locked.external_assignment_id)
        try:
            with transaction.atomic():
                bonus = Bonus.objects.create(
                    assignment=locked,
                    worker_id=locked.worker_id,
                    campaign=campaign,
                    amount_cents=amount_cents,
                    reason=reason[:1000],
                    idempotency_key=key,
                    status=PayoutStatus.PENDING if external else PayoutStatus.RECORDED,
                    given_by=actor,
                )
        except IntegrityError:  # the same request, at the same moment, from another process
            return Bonus.objects.get(assignment=locked, idempotency_key=key)
        if external:
            enqueue_on_commit(task_names.BONUS_SEND, bonus.pk)
    campaign_budget_enforce(campaign_id=campaign.pk)
    return bonus


def bonus_retry(*, bonus: Bonus) -> Bonus:
    """Send a bonus MTurk did not accept again (the Retry button of the failed payments page); the caller
    checked that the requester manages its campaign. Its attempts start over and it counts in the spend again
    (a failed bonus does not), so the campaign may pause at its budget.

    Locks the Bonus row; a bonus that is not failed answers 409 (a sent one must never be sent twice). The
    same UniqueRequestToken as before goes to SendBonus, so MTurk pays once even if an earlier attempt it
    answered with an error had gone through.
    """
    with transaction.atomic():
        locked = Bonus.objects.select_for_update().get(pk=bonus.pk)
        if locked.status != PayoutStatus.FAILED:
            raise ApplicationError(
                f"This bonus is {locked.get_status_display().lower()}; only a failed one is sent again.", status=409
            )
        _set_status(locked, PayoutStatus.PENDING)
        locked.attempts = 0
        locked.save(update_fields=["status", "attempts"])
        enqueue_on_commit(task_names.BONUS_SEND, locked.pk)
    campaign_budget_enforce(campaign_id=locked.campaign_id)
    return locked


def worker_message_send(*, campaign: Campaign, worker: Worker, subject: str, body: str, actor=None) -> WorkerMessage:
    """Write to a worker who has submitted work on `campaign`; the caller checked that `actor` may manage it.
    Recorded for a local worker; an MTurk worker's is sent with NotifyWorkers after commit. Not idempotent."""
    subject, body = (subject or "").strip(), (body or "").strip()
    if not subject or not body:
        raise ApplicationError("A message needs a subject and a text.")
    if len(subject) > 200 or len(body) > 4000:
        raise ApplicationError("A subject is at most 200 characters and a text at most 4,000.")
    worked = Assignment.objects.filter(
        hit__campaign=campaign,
        worker=worker,
        status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED],
    ).exists()
    if not worked:
        raise ApplicationError("You can write only to workers who did work on this campaign.", status=409)
    with transaction.atomic():
        message = WorkerMessage.objects.create(
            campaign=campaign,
            worker=worker,
            subject=subject,
            body=body,
            status=PayoutStatus.PENDING if worker.external_id else PayoutStatus.RECORDED,
            sent_by=actor,
        )
        if worker.external_id:
            enqueue_on_commit(task_names.WORKER_MESSAGE_SEND, message.pk)
    return message


def _error_text(error: Exception) -> str:
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        return f"{details.get('Code', 'Error')}: {details.get('Message', '')}"[:500]
    return f"{type(error).__name__}: {error}"[:500]


def _attempt(call) -> tuple[Exception | None, bool]:
    """Call MTurk once. Returns (None, False) on success, else (the error, whether it is final)."""
    try:
        call()
        return None, False
    except BotoCoreError as unreachable:
        return unreachable, False
    except ClientError as error:
        return error, error.response.get("Error", {}).get("Code") == "RequestError"


def _send(*, model, pk: int, call_for, client, related: tuple[str, ...]) -> object | None:
    """One attempt at a pending bonus or message, under its row lock; records it; raises PayoutNotSent when
    another attempt is worth it (after committing this one)."""
    retry = None
    with transaction.atomic():
        row = model.objects.select_for_update(of=("self",)).select_related(*related).filter(pk=pk).first()
        if row is None or row.status != PayoutStatus.PENDING:
            return row
        client = client or mturk.mturk_client(config=mturk.DECISION_CLIENT_CONFIG)
        row.attempts += 1
        error, final = _attempt(lambda: call_for(row, client))
        if error is None:
            _set_status(row, PayoutStatus.SENT)
            row.sent_at = timezone.now()
            row.last_error = ""
        else:
            row.last_error = _error_text(error)
            if final or row.attempts >= MAX_ATTEMPTS:
                _set_status(row, PayoutStatus.FAILED)
                logger.error("MTurk %s %s failed for good: %s", model.__name__, row.pk, row.last_error)
            else:
                retry = PayoutNotSent(f"{model.__name__} {row.pk}: {row.last_error}")
        row.save()
    if retry is not None:
        raise retry
    return row


def _send_bonus(bonus: Bonus, client) -> None:
    client.send_bonus(
        WorkerId=bonus.worker.external_id,
        BonusAmount=f"{bonus.amount_cents / 100:.2f}",
        AssignmentId=bonus.assignment.external_assignment_id,
        Reason=bonus.reason,
        UniqueRequestToken=f"vericap-bonus-{bonus.pk}",
    )


def _notify(message: WorkerMessage, client) -> None:
    response = client.notify_workers(
        Subject=message.subject, MessageText=message.body, WorkerIds=[message.worker.external_id]
    )
    failures = response.get("NotifyWorkersFailureStatuses") or []
    if failures:
        failure = failures[0]
        raise ClientError(
            {"Error": {"Code": "RequestError", "Message": failure.get("NotifyWorkersFailureMessage", "")}},
            "NotifyWorkers",
        )


def bonus_send(*, bonus_id: int, client=None) -> Bonus | None:
    """One attempt to pay a pending bonus on MTurk (SendBonus); a sent, failed or recorded one is left alone."""
    return _send(model=Bonus, pk=bonus_id, call_for=_send_bonus, client=client, related=("worker", "assignment"))


def worker_message_deliver(*, message_id: int, client=None) -> WorkerMessage | None:
    """One attempt to deliver a pending message on MTurk (NotifyWorkers); a refusal is final."""
    return _send(model=WorkerMessage, pk=message_id, call_for=_notify, client=client, related=("worker",))
