"""Webhook deliveries on the `default` queue: one attempt per task; the beat task retries what is due."""

from celery import shared_task

from annotator.core import task_names
from annotator.core.services.webhooks.delivery import webhook_deliver, webhooks_deliver_due

OPTIONS = {"acks_late": True, "reject_on_worker_lost": True, "time_limit": 120, "soft_time_limit": 100}


@shared_task(name=task_names.WEBHOOK_DELIVER, **OPTIONS)
def webhook_deliver_task(delivery_id: int) -> None:
    """First attempt of a new delivery (later ones come from webhooks_deliver_due_task)."""
    webhook_deliver(delivery_id=delivery_id)


@shared_task(name=task_names.WEBHOOKS_DELIVER_DUE, **{**OPTIONS, "time_limit": 600})
def webhooks_deliver_due_task() -> int:
    """Beat task: retry the deliveries whose next attempt is due."""
    return webhooks_deliver_due()
