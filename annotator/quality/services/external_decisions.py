"""Approvals and rejections of MTurk assignments, sent to MTurk by a retried Celery task.

MTurk pays a worker when it hears of an approval, so a decision must reach it exactly once. The local
decision writes an ExternalDecision row in its own transaction (`external_decision_record`); after commit
the task `workers.tasks.mturk.external_decision_send_task` sends it (`external_decision_send`). A network
error or MTurk's own fault is retried with backoff up to MAX_ATTEMPTS; MTurk refusing the request
(RequestError) is final unless MTurk already has the decision (an answer to a request that timed out, or
MTurk's own auto-approval), which counts as sent. A message lost with the broker is queued again by the
sweep (annotator.operations.services.sweep). A failed decision shows on the campaign's review page, where the
requester sends it again (`external_decision_retry`).
"""

from __future__ import annotations

import logging

from botocore.exceptions import BotoCoreError, ClientError
from django.db import transaction
from django.utils import timezone

from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.core.queue import enqueue_on_commit
from annotator.crowd import mturk
from annotator.crowd.models.crowd import Assignment
from annotator.quality.models.decisions import (
    EXTERNAL_DECISION_TRANSITIONS,
    DecisionKind,
    ExternalDecision,
    ExternalDecisionStatus,
)

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
DEFAULT_REJECTION_FEEDBACK = "The answers to the check questions were wrong."
# MTurk's AssignmentStatus once it has each decision.
MTURK_STATUS = {DecisionKind.APPROVE: "Approved", DecisionKind.REJECT: "Rejected"}
APPROVED_ON_MTURK = "MTurk has approved this assignment and paid the worker; it cannot be rejected there any more."


class DecisionNotSent(Exception):
    """An attempt failed in a way worth another try; the task retries on it with backoff."""


def _set_status(decision: ExternalDecision, target: str) -> None:
    check_transition(
        transitions=EXTERNAL_DECISION_TRANSITIONS, current=decision.status, target=target, what="MTurk decision"
    )
    decision.status = target


def external_decision_record(*, assignment: Assignment, approve: bool, reason: str) -> ExternalDecision | None:
    """Remember the local decision on an MTurk assignment and send it after commit; None for a local worker.

    Call inside the transaction of the local decision, holding the Assignment row lock. Locks the
    ExternalDecision row. Idempotent: the same decision again changes nothing and sends nothing. A
    different decision replaces the one not sent yet, or follows the one MTurk has (an approval after a
    sent rejection overrides it).
    """
    if not assignment.external_assignment_id:
        return None
    kind = DecisionKind.APPROVE if approve else DecisionKind.REJECT
    reason = (reason or "")[:1000]
    decision = ExternalDecision.objects.select_for_update().filter(assignment=assignment).first()
    if decision is None:
        decision = ExternalDecision.objects.create(assignment=assignment, decision=kind, reason=reason)
    elif decision.decision == kind:
        return decision
    else:
        rejected_on_mturk = decision.decision == DecisionKind.REJECT and decision.status == ExternalDecisionStatus.SENT
        _set_status(decision, ExternalDecisionStatus.PENDING)
        decision.decision = kind
        decision.reason = reason
        overrides = rejected_on_mturk or decision.overrides_rejection
        decision.overrides_rejection = kind == DecisionKind.APPROVE and overrides
        decision.attempts = 0
        decision.last_error = ""
        decision.sent_at = None
        decision.save()
    enqueue_on_commit(task_names.EXTERNAL_DECISION_SEND, decision.pk)
    return decision


class ApprovedOnMturk(Exception):
    """MTurk approved the assignment (and paid the worker); it cannot reject it any more."""


def _send(decision: ExternalDecision, client) -> None:
    if decision.decision == DecisionKind.APPROVE:
        mturk.mturk_approve(
            assignment=decision.assignment,
            client=client,
            feedback=decision.reason,
            override_rejection=decision.overrides_rejection,
        )
    else:
        mturk.mturk_reject(
            assignment=decision.assignment,
            client=client,
            feedback=decision.reason.strip() or DEFAULT_REJECTION_FEEDBACK,
        )


def _attempt(decision: ExternalDecision, client) -> tuple[Exception | None, bool]:
    """Send once. Returns (None, False) when MTurk has the decision, else (the error, whether it is final)."""
    try:
        _send(decision, client)
        return None, False
    except BotoCoreError as unreachable:
        return unreachable, False
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "RequestError":
            return error, False  # MTurk's own fault or throttling: worth another try
        refused = error
    # MTurk refused the request, perhaps because it has the decision already (an earlier attempt whose
    # answer was lost, or MTurk's own auto-approval): ask it.
    try:
        status = mturk.mturk_assignment_status(assignment=decision.assignment, client=client)
    except (BotoCoreError, ClientError) as unknown:
        return unknown, False  # cannot tell yet
    if status == MTURK_STATUS[decision.decision]:
        return None, False
    if status == MTURK_STATUS[DecisionKind.APPROVE]:
        return ApprovedOnMturk(APPROVED_ON_MTURK), True
    return refused, True


def _error_text(error: Exception) -> str:
    if isinstance(error, ApprovedOnMturk):
        return str(error)
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        return f"{details.get('Code', 'Error')}: {details.get('Message', '')}"[:500]
    return f"{type(error).__name__}: {error}"[:500]


def external_decision_send(*, decision_id: int, client=None) -> ExternalDecision | None:
    """One attempt to send a pending decision to MTurk; records it (attempts, last_error, status).

    Holds the ExternalDecision row lock (SELECT ... FOR UPDATE) during the MTurk call, so two tasks never
    send one decision at once. Idempotent: a decision that is sent (or failed, or gone) is left alone
    and MTurk is not called. Raises DecisionNotSent after a failed attempt that should be retried (the
    attempt is committed first); after MAX_ATTEMPTS or a refusal by MTurk the decision is `failed`.
    """
    retry = None
    with transaction.atomic():
        decision = (
            ExternalDecision.objects.select_for_update(of=("self",))
            .select_related("assignment")
            .filter(pk=decision_id)
            .first()
        )
        if decision is None or decision.status != ExternalDecisionStatus.PENDING:
            return decision
        client = client or mturk.mturk_client(config=mturk.DECISION_CLIENT_CONFIG)
        decision.attempts += 1
        error, final = _attempt(decision, client)
        if error is None:
            _set_status(decision, ExternalDecisionStatus.SENT)
            decision.sent_at = timezone.now()
            decision.last_error = ""
        else:
            decision.last_error = _error_text(error)
            if final or decision.attempts >= MAX_ATTEMPTS:
                _set_status(decision, ExternalDecisionStatus.FAILED)
                logger.error("MTurk decision %s failed for good: %s", decision.pk, decision.last_error)
            else:
                retry = DecisionNotSent(f"decision {decision.pk}, attempt {decision.attempts}: {decision.last_error}")
        decision.save()
    if retry is not None:
        raise retry
    return decision


def external_decision_retry(*, decision: ExternalDecision) -> ExternalDecision:
    """Send a failed decision again (the requester's Retry button); its attempts start over.

    Locks the ExternalDecision row; a decision that is not failed answers 409.
    """
    with transaction.atomic():
        locked = ExternalDecision.objects.select_for_update().get(pk=decision.pk)
        if locked.status != ExternalDecisionStatus.FAILED:  # a sent one must never be sent twice
            raise ApplicationError(
                f"This decision is {locked.get_status_display().lower()}; only a failed one is sent again.", status=409
            )
        _set_status(locked, ExternalDecisionStatus.PENDING)
        locked.attempts = 0
        locked.save(update_fields=["status", "attempts", "updated_at"])
        enqueue_on_commit(task_names.EXTERNAL_DECISION_SEND, locked.pk)
        return locked
