from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.campaigns.models.campaign import Campaign, Pair
from annotator.datasets.models.dataset import Caption


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
