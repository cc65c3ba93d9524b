from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.campaigns.models.campaign import Campaign


class ExportFormat(models.TextChoices):
    ECCV_JSON = "eccv_json", 'ECCV Caption JSON ({"i2t": ..., "t2i": ...})'
    ECCV_SPLIT = "eccv_split", "ECCV Caption, two files as released (zip)"
    JSONL = "jsonl", "JSONL with every approved answer"
    CXC_CSV = "cxc_csv", "CSV in the Crisscrossed Captions form (similarity campaigns)"
    CSV = "csv", "CSV, a row per labelled pair with P(positive) and its 90% interval"


class ExportVariant(models.TextChoices):
    LENIENT = "lenient", '"100% YES" and "Partially YES"'
    STRICT = "strict", '"100% YES" only'


class ExportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


EXPORT_TRANSITIONS = {
    ExportStatus.QUEUED: {ExportStatus.RUNNING, ExportStatus.FAILED},
    # A redelivered task may start again from running (the worker died mid-write).
    ExportStatus.RUNNING: {ExportStatus.SUCCEEDED, ExportStatus.FAILED, ExportStatus.RUNNING},
    ExportStatus.FAILED: {ExportStatus.QUEUED},
    ExportStatus.SUCCEEDED: set(),
}


class ExportJob(models.Model):
    """One export of a campaign's labels to a file in storage, written by a Celery task."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="exports")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="exports")
    format = models.CharField(max_length=16, choices=ExportFormat.choices)
    variant = models.CharField(max_length=8, choices=ExportVariant.choices, default=ExportVariant.LENIENT)
    method = models.CharField(max_length=16)  # the Label.method exported
    merge_original = models.BooleanField(default=False)  # add the dataset's original pairs as positives
    status = models.CharField(max_length=16, choices=ExportStatus.choices, default=ExportStatus.QUEUED)
    file = models.FileField(upload_to="exports/", max_length=500, blank=True)
    rows = models.PositiveBigIntegerField(default=0)  # lines / keys written
    size_bytes = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)  # when a retry queued it again (annotator/core/jobs.py)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ExportStatus.values), name="export_status_valid"),
            models.CheckConstraint(condition=Q(format__in=ExportFormat.values), name="export_format_valid"),
            models.CheckConstraint(condition=Q(variant__in=ExportVariant.values), name="export_variant_valid"),
        ]

    def __str__(self):
        return f"export {self.pk} ({self.format}, {self.status})"
