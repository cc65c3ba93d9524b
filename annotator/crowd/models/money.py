from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.campaigns.models.campaign import Campaign
from annotator.crowd.models.crowd import Assignment, Worker


class PayoutStatus(models.TextChoices):
    RECORDED = "recorded", "Recorded (a local worker)"
    PENDING = "pending", "Waiting to be sent to MTurk"
    SENT = "sent", "Sent to MTurk"
    FAILED = "failed", "Not accepted by MTurk"


PAYOUT_TRANSITIONS = {
    PayoutStatus.RECORDED: set(),
    # Pending to pending: an attempt failed and another follows.
    PayoutStatus.PENDING: {PayoutStatus.PENDING, PayoutStatus.SENT, PayoutStatus.FAILED},
    PayoutStatus.SENT: set(),
    # The requester's Retry (annotator.crowd.services.bonuses.bonus_retry): MTurk is asked again.
    PayoutStatus.FAILED: {PayoutStatus.PENDING},
}


class Bonus(models.Model):
    """Money a requester gives a worker on top of the reward, for an approved assignment of their campaign.

    Counted in the campaign's spend. A bonus on an MTurk assignment is sent with SendBonus by a retried task
    (annotator.crowd.services.bonuses); a local worker's is recorded and shown on their work page. The
    idempotency key makes a repeated request (a double click, a retried API call) the same bonus.
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="bonuses")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="bonuses")
    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, related_name="bonuses")
    amount_cents = models.PositiveIntegerField()
    reason = models.CharField(max_length=1000)  # the worker sees it
    idempotency_key = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=PayoutStatus.choices)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    given_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount_cents__gt=0), name="bonus_amount_positive"),
            models.CheckConstraint(condition=~Q(reason=""), name="bonus_has_reason"),
            models.CheckConstraint(condition=Q(status__in=PayoutStatus.values), name="bonus_status_valid"),
            models.CheckConstraint(
                condition=~Q(status=PayoutStatus.SENT) | Q(sent_at__isnull=False), name="bonus_sent_has_time"
            ),
            models.UniqueConstraint(fields=["assignment", "idempotency_key"], name="bonus_one_per_assignment_key"),
        ]

    def __str__(self):
        return f"bonus {self.pk} ({self.amount_cents} cents, {self.status})"


class WorkerMessage(models.Model):
    """A requester's message to a worker who worked on their campaign: shown on the worker's work page, and
    sent with MTurk's NotifyWorkers when the worker came from MTurk."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="worker_messages")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="messages")
    subject = models.CharField(max_length=200)
    body = models.CharField(max_length=4000)
    status = models.CharField(max_length=8, choices=PayoutStatus.choices)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    sent_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(subject="") & ~Q(body=""), name="worker_message_not_empty"),
            models.CheckConstraint(condition=Q(status__in=PayoutStatus.values), name="worker_message_status_valid"),
        ]
