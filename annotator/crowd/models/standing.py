from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.crowd.models.crowd import Worker


class TrustAction(models.TextChoices):
    BLOCK = "block", "Blocked by a requester"
    UNBLOCK = "unblock", "Unblocked by a requester"
    SOFT_BLOCK = "soft_block", "Soft-blocked automatically"
    SOFT_UNBLOCK = "soft_unblock", "Soft block lifted automatically"
    PLATFORM_BLOCK = "platform_block", "Blocked on the whole platform by staff"
    PLATFORM_UNBLOCK = "platform_unblock", "Platform block lifted by staff"


class WorkerStanding(models.Model):
    """One requester's standing with one worker: the requester's block, the automatic soft block, and the
    gold record the worker earned on that requester's campaigns. A requester is a tenant: a claim on a
    campaign checks its owner's standing (and the platform block, Worker.blocked), and no other requester
    ever sees this row. Written only by annotator.quality.services.trust."""

    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker_standings")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="standings")
    blocked = models.BooleanField(default=False)
    blocked_reason = models.CharField(max_length=500, blank=True)
    blocked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    blocked_at = models.DateTimeField(null=True, blank=True)
    soft_blocked = models.BooleanField(default=False)  # automatically, under the trust thresholds
    soft_block_reason = models.CharField(max_length=1000, blank=True)
    gold_correct = models.PositiveIntegerField(default=0)
    gold_total = models.PositiveIntegerField(default=0)
    # Gold answers right in a row since the last miss: adaptive gold offers gold-light HITs from
    # QUALITY_GOLD_LIGHT_AFTER on, and a miss starts it again from 0.
    gold_clean_streak = models.PositiveIntegerField(default=0, db_default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["requester", "worker"], name="worker_standing_one_per_requester"),
            models.CheckConstraint(condition=Q(gold_correct__lte=models.F("gold_total")), name="standing_gold_counts"),
            models.CheckConstraint(
                condition=Q(blocked=False) | (~Q(blocked_reason="") & Q(blocked_at__isnull=False)),
                name="standing_block_has_reason",
            ),
        ]

    def __str__(self):
        return f"{self.worker} for {self.requester}"


class WorkerTrustEvent(models.Model):
    """Every block and unblock of a worker, by a requester, by the trust rule or by staff: who, when, why.
    `requester` is whose standing changed; empty for a platform block."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="trust_events")
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    action = models.CharField(max_length=16, choices=TrustAction.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    reason = models.CharField(max_length=1000, blank=True)
    gold_total_at = models.PositiveIntegerField(default=0)  # the standing's gold evidence at that moment
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(action__in=TrustAction.values), name="worker_trust_action_valid")
        ]

    def __str__(self):
        return f"{self.worker} {self.action}"
