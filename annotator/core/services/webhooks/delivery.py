"""Signed webhooks (the Standard Webhooks scheme, standardwebhooks.com): events go to a requester's URLs.

A message is a JSON body {"type": event, "timestamp": ISO time, "data": {...}} POSTed with the headers
`webhook-id` (unique per message, the receiver's deduplication key), `webhook-timestamp` (Unix seconds)
and `webhook-signature` ("v1," + base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" with the endpoint's
secret, "whsec_" + base64 key), so the reference libraries verify it. A delivery is tried at once (a
Celery task after commit) and, while the receiver fails (no 2xx, a timeout, a refused connection), again
after RETRY_SCHEDULE (30 s, 2 min, 10 min, 1 h, 6 h, 24 h) by the beat task; then it is given up. Every
attempt is kept in the delivery's log as a DeliveryError category (no socket error text, no timings).

The URL is checked when it is saved and again before every attempt (targets.webhook_target_check: public
unicast addresses only, unless the operator allows a receiver), and the request goes to the address that
the check returned (transport.webhook_post). A 3xx answer is a failed attempt and is not followed.

Events: campaign.finished, export.ready, import.done, assignment.flagged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotator.core import task_names
from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.core.models.webhooks import (
    DELIVERY_TRANSITIONS,
    DeliveryError,
    DeliveryStatus,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from annotator.core.queue import enqueue_on_commit
from annotator.core.services.webhooks import targets, transport

RETRY_SCHEDULE = [timedelta(seconds=30), timedelta(minutes=2), timedelta(minutes=10), timedelta(hours=1)]
RETRY_SCHEDULE += [timedelta(hours=6), timedelta(hours=24)]
TIMEOUT_SECONDS = 10
MAX_ENDPOINTS = 20
ADDRESSES_TRIED = 3  # a name with several addresses: the next is tried while they refuse the connection


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def sign(*, secret: str, message_id: str, timestamp: int, body: str) -> str:
    """The webhook-signature header value for one message."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{message_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def webhook_endpoint_create(*, owner, url: str, events: list[str] | None = None) -> WebhookEndpoint:
    """Register a URL for some events (none = all) with a fresh signing secret. The URL must pass
    targets.webhook_target_check (an ApplicationError naming why, otherwise). No locks."""
    url = (url or "").strip()
    targets.webhook_target_check(url=url)
    events = list(dict.fromkeys(events or []))
    unknown = [e for e in events if e not in WebhookEvent.values]
    if unknown:
        raise ApplicationError(f"Unknown events: {', '.join(unknown)}; use {', '.join(WebhookEvent.values)}.")
    if WebhookEndpoint.objects.filter(owner=owner).count() >= MAX_ENDPOINTS:
        raise ApplicationError(f"At most {MAX_ENDPOINTS} webhook endpoints per account.")
    return WebhookEndpoint.objects.create(owner=owner, url=url, events=events, secret=new_secret())


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


def webhook_emit(*, owner, event: str, data: dict) -> int:
    """Queue `event` for every active endpoint of `owner` that wants it; delivered after commit. Returns
    how many deliveries were created. Safe inside the caller's transaction (nothing leaves before commit)."""
    if owner is None:
        return 0
    endpoints = [e for e in WebhookEndpoint.objects.filter(owner=owner, active=True) if e.wants(event)]
    payload = {"type": event, "timestamp": timezone.now().isoformat(), "data": data}
    for endpoint in endpoints:
        delivery = WebhookDelivery.objects.create(
            endpoint=endpoint,
            message_id=f"msg_{secrets.token_hex(12)}",
            event=event,
            payload=payload,
            next_attempt_at=timezone.now(),
        )
        enqueue_on_commit(task_names.WEBHOOK_DELIVER, delivery.pk)
    return len(endpoints)


def _post(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """One attempt: check the URL again, send to a checked address. Returns (HTTP status or None, the
    DeliveryError category or "" when delivered)."""
    try:
        target = targets.webhook_target_check(url=delivery.endpoint.url)
    except targets.WebhookTargetRefused as refused:
        return None, refused.category
    body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True)
    timestamp = int(time.time())
    headers = {
        "content-type": "application/json",
        "user-agent": "Vericap-Webhooks/1",
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(
            secret=delivery.endpoint.secret, message_id=delivery.message_id, timestamp=timestamp, body=body
        ),
    }
    category = DeliveryError.CONNECTION
    for address in target.addresses[:ADDRESSES_TRIED]:
        try:
            code = transport.webhook_post(
                target=target, address=address, body=body.encode(), headers=headers, timeout=TIMEOUT_SECONDS
            )
        except transport.DeliveryFailed as failure:
            category = failure.category
            if category == DeliveryError.REFUSED:  # nothing was sent: the next address may answer
                continue
            return None, category
        if 200 <= code < 300:
            return code, ""
        return code, DeliveryError.REDIRECT if 300 <= code < 400 else DeliveryError.HTTP_STATUS
    return None, category


def webhook_deliver(*, delivery_id: int, now=None) -> WebhookDelivery | None:
    """One attempt at a pending delivery that is due; records it and schedules the next on failure.

    Locks the delivery row (SELECT ... FOR UPDATE SKIP LOCKED where supported) for the attempt, so two
    workers never send the same attempt twice; a delivered or given-up one is left alone (idempotent).
    """
    now = now or timezone.now()
    with transaction.atomic():
        query = WebhookDelivery.objects.select_related("endpoint").filter(pk=delivery_id)
        from django.db import connection

        if connection.features.has_select_for_update_skip_locked:
            query = query.select_for_update(skip_locked=True, of=("self",))
        delivery = query.first()
        if delivery is None or delivery.status != DeliveryStatus.PENDING:
            return delivery
        if delivery.next_attempt_at and delivery.next_attempt_at > now:
            return delivery
        code, error = _post(delivery)
        delivery.attempts += 1
        delivery.last_status_code = code
        delivery.last_error = error
        entry = {"at": now.replace(microsecond=0).isoformat(), "status_code": code, "error": error}
        delivery.log = [*delivery.log, entry][-20:]
        if code is not None and 200 <= code < 300:
            target = DeliveryStatus.SUCCEEDED
            delivery.delivered_at = now
            delivery.next_attempt_at = None
        elif delivery.attempts > len(RETRY_SCHEDULE):
            target = DeliveryStatus.FAILED
            delivery.next_attempt_at = None
        else:
            target = DeliveryStatus.PENDING
            delivery.next_attempt_at = now + RETRY_SCHEDULE[delivery.attempts - 1]
        check_transition(transitions=DELIVERY_TRANSITIONS, current=delivery.status, target=target, what="delivery")
        delivery.status = target
        delivery.save()
        return delivery


def webhooks_deliver_due(*, now=None, limit: int = 200) -> int:
    """Beat task: attempt every pending delivery whose next attempt is due. Returns how many were tried."""
    now = now or timezone.now()
    due = list(
        WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in due:
        webhook_deliver(delivery_id=pk, now=now)
    return len(due)


def webhook_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a given-up delivery again (a requester's button); the attempt count starts over."""
    with transaction.atomic():
        locked = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
        if locked.status != DeliveryStatus.FAILED:
            raise ApplicationError(
                f"Only a delivery that was given up can be sent again; this one is {locked.get_status_display()}.",
                status=409,
            )
        check_transition(
            transitions=DELIVERY_TRANSITIONS, current=locked.status, target=DeliveryStatus.PENDING, what="delivery"
        )
        locked.status = DeliveryStatus.PENDING
        locked.attempts = 0
        locked.next_attempt_at = timezone.now()
        locked.save(update_fields=["status", "attempts", "next_attempt_at"])
        enqueue_on_commit(task_names.WEBHOOK_DELIVER, locked.pk)
        return locked
