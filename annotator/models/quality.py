from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.models.campaign import Campaign, Pair
from annotator.models.crowd import Worker
from annotator.models.dataset import Caption


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
    ever sees this row. Written only by annotator.services.quality.trust."""

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


class CleanupKind(models.TextChoices):
    NOT_A_DESCRIPTION = "not_description", "Caption is not a description"
    ORIGINAL_REJECTED = "original_rejected", "Original pair rejected by the crowd"


class CleanupStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    CONFIRMED = "confirmed", "Removal confirmed"
    DISMISSED = "dismissed", "Kept"


class CleanupProposal(models.Model):
    """Post-processing (ECCV Caption App. C): a caption proposed for removal, because its text is not a
    description (`not_description`) or because the crowd rejected its original pair (`original_rejected`,
    `pair` is that pair; as in ECCV Caption, a caption that does not fit its own image is an invalid caption).

    The requester confirms or dismisses. A confirmed proposal of either kind removes the caption: every export
    (ECCV JSON and split, JSONL, Crisscrossed CSV, the Postgres table) and the evaluation's label maps leave out
    the caption and every pair it is in. Proposed and dismissed ones change nothing.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="cleanup_proposals")
    kind = models.CharField(max_length=20, choices=CleanupKind.choices)
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    pair = models.ForeignKey(Pair, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    evidence = models.JSONField(default=dict, blank=True)  # heuristics hit, crowd votes
    status = models.CharField(max_length=12, choices=CleanupStatus.choices, default=CleanupStatus.PROPOSED)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "kind", "caption"], name="cleanup_one_per_caption_kind"),
            models.CheckConstraint(condition=Q(status__in=CleanupStatus.values), name="cleanup_status_valid"),
        ]

    def __str__(self):
        return f"cleanup {self.kind} caption {self.caption_id}"
