from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.campaigns.models.campaign import Campaign
from annotator.labels.models.exports import ExportVariant
from annotator.ranking.models.ranking import MachineAnnotator, RankingRun


class EvaluationStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


EVALUATION_TRANSITIONS = {
    EvaluationStatus.QUEUED: {EvaluationStatus.RUNNING, EvaluationStatus.FAILED},
    # A redelivered task may start again from running (the worker died while scoring).
    EvaluationStatus.RUNNING: {EvaluationStatus.SUCCEEDED, EvaluationStatus.FAILED, EvaluationStatus.RUNNING},
    EvaluationStatus.FAILED: {EvaluationStatus.QUEUED},
    EvaluationStatus.SUCCEEDED: set(),
}


class Evaluation(models.Model):
    """A retrieval model's scores against a campaign's verified labels (of one aggregation method and
    variant) or against a label set, with every metric and its interval.

    Keyed: `key` is a digest of what was scored (the labels' content, the rankings' content and the
    settings), so the same rankings against the same labels give the same stored evaluation.
    """

    campaign = models.ForeignKey(
        Campaign, null=True, blank=True, on_delete=models.CASCADE, related_name="evaluations"
    )  # the labels: a campaign's (method, variant) ...
    label_set = models.ForeignKey(
        "annotator.LabelSet", null=True, blank=True, on_delete=models.CASCADE, related_name="evaluations"
    )  # ... or a label set (one version; method and variant are blank)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="evaluations")
    name = models.CharField(max_length=200)  # the model being evaluated
    variant = models.CharField(max_length=8, choices=ExportVariant.choices, default=ExportVariant.LENIENT, blank=True)
    method = models.CharField(max_length=16, blank=True)
    key = models.CharField(max_length=64, blank=True)  # sha256 of labels, rankings and settings
    rankings_sha256 = models.CharField(max_length=64, blank=True)
    rankings_file = models.FileField(upload_to="rankings/", max_length=500, blank=True)  # uploads, kept private
    ranking_run = models.ForeignKey(
        RankingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations"
    )  # the rankings came from this stored run
    annotator = models.ForeignKey(
        MachineAnnotator, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations"
    )  # the model is this machine annotator
    # The model proposed candidates that built these labels (ECCV Caption App. E.3): its scores are favoured.
    biased = models.BooleanField(default=False)
    settings = models.JSONField(default=dict, blank=True)  # bootstrap, PMRP and semantic settings
    status = models.CharField(max_length=16, choices=EvaluationStatus.choices, default=EvaluationStatus.QUEUED)
    error = models.TextField(blank=True)
    # {"verified": {"i2t": {r1, r5, r10, r_precision, map_at_r}, "t2i": {...}},
    #  "original": {"i2t": {r1, r5, r10}, "t2i": {...}}, "counts": {...},
    #  "metrics": {direction: {metric: {"value", "low", "high"}}}, "protocols": {...}, "notes": [...]}
    results = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(variant__in=ExportVariant.values), name="evaluation_variant_valid"),
            models.CheckConstraint(condition=Q(status__in=EvaluationStatus.values), name="evaluation_status_valid"),
            models.CheckConstraint(
                condition=Q(campaign__isnull=False, label_set__isnull=True) & ~Q(method="")
                | Q(campaign__isnull=True, label_set__isnull=False, method=""),
                name="evaluation_one_target",
            ),
            models.UniqueConstraint(fields=["key"], condition=~Q(key=""), name="evaluation_key_unique"),
        ]

    def __str__(self):
        return f"{self.name} on {self.campaign or self.label_set}"
