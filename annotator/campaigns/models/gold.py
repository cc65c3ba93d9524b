"""Keeping gold secret: the qualification pool apart from HIT gold, and retired HIT gold.

QualificationItem: a pair set aside when the campaign is built, shown only in qualification tests (never in
a HIT), with its gold role. The pair is stored by its members (not as a campaign Pair), so it never enters
the campaign's pairs, statistics, labels or exports.

GoldRetirement: a HIT gold pair that was seen by too many workers, or whose accuracy rose for workers who
had seen it before; the HITs nobody had opened yet got a fresh gold pair in its place.
"""

from django.db import models
from django.db.models import Q

from annotator.campaigns.models.campaign import Campaign, Pair, PairKind
from annotator.datasets.models.dataset import Caption, Image


class QualificationRole(models.TextChoices):
    GOLD_POSITIVE = "gold_positive", "Gold positive"
    GOLD_NEGATIVE = "gold_negative", "Gold negative"


class QualificationItem(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="qualification_pool")
    key = models.BigIntegerField()  # the pair key (first member id << 32 | second), as in campaign building
    kind = models.CharField(max_length=16, choices=PairKind.choices, default=PairKind.IMAGE_CAPTION)
    image = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    caption = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    other_image = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    other_caption = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=16, choices=QualificationRole.choices)
    times_shown = models.PositiveIntegerField(default=0)  # qualification attempts that included it
    # Set when a run added later proposed the pair as a candidate: it would then appear in a HIT.
    withdrawn = models.BooleanField(default=False)

    class Meta:
        ordering = ["campaign_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "key"], name="qualification_item_key_unique"),
            models.CheckConstraint(condition=Q(role__in=QualificationRole.values), name="qualification_item_role"),
        ]

    def __str__(self):
        return f"qualification item {self.pk} ({self.role})"


class GoldRetirementReason(models.TextChoices):
    EXPOSED = "exposed", "Seen by too many workers"
    LEARNED = "learned", "More accurate for workers who had seen it before"


class GoldRetirement(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="gold_retirements")
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=16)
    reason = models.CharField(max_length=16, choices=GoldRetirementReason.choices)
    exposure = models.PositiveIntegerField()  # distinct workers who had seen it when it was retired
    detail = models.JSONField(default=dict, blank=True)  # accuracies behind a "learned" retirement
    replaced_in = models.JSONField(default=list, blank=True)  # [(hit id, new pair id), ...]
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "pair"], name="gold_retirement_one_per_pair"),
            models.CheckConstraint(
                condition=Q(reason__in=GoldRetirementReason.values), name="gold_retirement_reason_valid"
            ),
        ]

    def __str__(self):
        return f"retired gold {self.pair_id} ({self.reason})"
