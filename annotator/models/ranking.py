from django.conf import settings
from django.db import models

from annotator.models.dataset import Dataset


class AnnotatorKind(models.TextChoices):
    CLIP = "clip", "CLIP (Hugging Face checkpoint directory)"
    MINILM_PIVOT = "minilm_pivot", "all-MiniLM-L6-v2, images pivoted through their captions"
    TFIDF_PIVOT = "tfidf_pivot", "TF-IDF, images pivoted through their captions"
    VISUAL = "visual", "Colour, layout and gradient features (images only, no text, no weights)"
    EXTERNAL = "external", "External label set (imported, not a model)"
    UPLOADED = "uploaded", "Rankings uploaded by a researcher (a model run elsewhere)"
    ENLARGEMENT = "enlargement", "Gallery enlargement: each caption's added pool images, by similarity"


class MachineAnnotator(models.Model):
    """A retrieval model used to propose candidates."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=32, choices=AnnotatorKind.choices)
    checkpoint_path = models.CharField(max_length=500, blank=True)
    weights_hash = models.CharField(max_length=64, blank=True)  # content hash of the weights, set on load
    config = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Direction(models.TextChoices):
    I2T = "i2t", "Image to captions"
    T2I = "t2i", "Caption to images"
    T2T = "t2t", "Caption to captions"
    I2I = "i2i", "Image to images"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


RUN_TRANSITIONS = {
    RunStatus.QUEUED: {RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED},
    RunStatus.RUNNING: {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.QUEUED},
    RunStatus.FAILED: {RunStatus.QUEUED},
    RunStatus.CANCELLED: {RunStatus.QUEUED},
    RunStatus.SUCCEEDED: set(),
}


class RankingRun(models.Model):
    """One MachineAnnotator over one Dataset: top-K per query in both directions."""

    annotator = models.ForeignKey(MachineAnnotator, on_delete=models.PROTECT, related_name="runs")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="ranking_runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    top_k = models.PositiveIntegerField(default=25)
    # Progress is committed chunk by chunk; `progress` holds the resume point of each phase.
    stage = models.CharField(max_length=32, blank=True)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    progress = models.JSONField(default=dict, blank=True)
    device = models.CharField(max_length=32, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)  # when a retry queued it again (annotator/jobs.py)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.CheckConstraint(condition=models.Q(status__in=RunStatus.values), name="run_status_valid")]

    def __str__(self):
        return f"{self.annotator} on {self.dataset} ({self.status})"


class Candidate(models.Model):
    """(run, direction, query, target, rank, score).

    query_id and target_id are Image or Caption primary keys, as the direction says (i2t: image -> caption).
    Plain integers rather than foreign keys so a run writes millions of them with COPY; they are deleted
    with their run.
    """

    run = models.ForeignKey(RankingRun, on_delete=models.CASCADE, related_name="candidates")
    direction = models.CharField(max_length=3, choices=Direction.choices)
    query_id = models.BigIntegerField()
    target_id = models.BigIntegerField()
    rank = models.PositiveIntegerField()  # 1 is best
    score = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "direction", "query_id", "rank"], name="candidate_rank_unique"),
            models.UniqueConstraint(
                fields=["run", "direction", "query_id", "target_id"], name="candidate_target_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(direction__in=Direction.values), name="candidate_direction_valid"
            ),
            models.CheckConstraint(condition=models.Q(rank__gte=1), name="candidate_rank_positive"),
        ]

    def __str__(self):
        return f"{self.direction} {self.query_id} -> {self.target_id} @{self.rank}"
