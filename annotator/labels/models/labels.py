from django.db import models
from django.db.models import Q

from annotator.campaigns.models.campaign import Pair
from annotator.crowd.models.crowd import Choice


class AggregationMethod(models.TextChoices):
    MAJORITY = "majority", "Majority vote"
    GOLD_WEIGHTED = "gold_weighted", "Gold-weighted vote"
    DAWID_SKENE = "dawid_skene", "Dawid-Skene"
    POSTERIOR = "posterior", "Posterior (Dawid-Skene with gold, priors and the machine prior)"
    GLAD = "glad", "GLAD"
    MACE = "mace", "MACE"
    WAWA = "wawa", "Wawa"
    MEAN = "mean", "Mean score (similarity)"


class Label(models.Model):
    """The verified result for a Pair after aggregation, one per method."""

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="labels")
    method = models.CharField(max_length=16, choices=AggregationMethod.choices)
    choice = models.CharField(max_length=16, choices=Choice.choices, blank=True)
    score = models.FloatField(null=True, blank=True)
    is_positive = models.BooleanField()  # 100% YES or Partially YES (score >= 3 for similarity)
    is_positive_strict = models.BooleanField()  # 100% YES only
    confidence = models.FloatField()
    answer_count = models.PositiveIntegerField()
    # P(positive) and its 90% interval (posterior: from the worker and prior uncertainty; similarity: from
    # the mean's standard error). score_low/score_high: the 90% interval of a similarity mean.
    probability = models.FloatField(null=True, blank=True)
    probability_low = models.FloatField(null=True, blank=True)
    probability_high = models.FloatField(null=True, blank=True)
    score_low = models.FloatField(null=True, blank=True)
    score_high = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pair", "method"], name="label_one_per_pair_method"),
            models.CheckConstraint(condition=Q(confidence__gte=0, confidence__lte=1), name="label_confidence_range"),
            models.CheckConstraint(
                condition=Q(probability__isnull=True) | Q(probability__gte=0, probability__lte=1),
                name="label_probability_range",
            ),
        ]

    def __str__(self):
        return f"label {self.pair_id} {self.method}"
