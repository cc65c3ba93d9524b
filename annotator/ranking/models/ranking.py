from django.conf import settings
from django.db import models

from annotator.datasets.models.dataset import Dataset


class AnnotatorKind(models.TextChoices):
    CLIP = "clip", "CLIP (Hugging Face checkpoint directory)"
    OPEN_CLIP = "open_clip", "OpenCLIP (a checkpoint file and its model name)"
    HF_DUAL = "hf_dual", "Hugging Face dual encoder (SigLIP, ALIGN, ...: a checkpoint directory)"
    CROSS_ENCODER = "cross_encoder", "Cross-encoder matching head (ViLT, BLIP): re-ranks a finished run's top K"
    VLM_JUDGE = "vlm_judge", "Vision-language judge (a local VLM asked the HIT's question): scores a run's top K"
    MINILM_PIVOT = "minilm_pivot", "all-MiniLM-L6-v2, images pivoted through their captions"
    TFIDF_PIVOT = "tfidf_pivot", "TF-IDF, images pivoted through their captions"
    VISUAL = "visual", "Colour, layout and gradient features (images only, no text, no weights)"
    EXTERNAL = "external", "External label set (imported, not a model)"
    UPLOADED = "uploaded", "Rankings uploaded by a researcher (a model run elsewhere)"
    ENLARGEMENT = "enlargement", "Gallery enlargement: each caption's added pool images, by similarity"


class MachineAnnotator(models.Model):
    """A retrieval model used to propose candidates."""

    name = models.CharField(max_length=100, unique=True)
    # An AnnotatorKind, or the kind of an installed plugin package (annotator.ranking.services.kinds): not a
    # fixed choice list, so installing a plugin needs no migration. annotator_register checks it.
    kind = models.CharField(max_length=32)
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
    # A re-ranking run: a cross-encoder scored this run's top `top_k` per query (i2t and t2i) pair by pair.
    reranks = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="reranked_by")
    # A judge run: a vision-language judge scored every image-caption pair of this campaign (gold included).
    judges = models.ForeignKey(
        "annotator.Campaign", null=True, blank=True, on_delete=models.CASCADE, related_name="judge_runs"
    )
    # Progress is committed chunk by chunk; `progress` holds the resume point of each phase.
    stage = models.CharField(max_length=32, blank=True)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    progress = models.JSONField(default=dict, blank=True)
    device = models.CharField(max_length=32, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)  # when a retry queued it again (annotator/core/jobs.py)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=RunStatus.values), name="run_status_valid"),
            models.CheckConstraint(condition=~models.Q(reranks=models.F("id")), name="run_reranks_another"),
            models.CheckConstraint(
                condition=models.Q(reranks__isnull=True) | models.Q(judges__isnull=True),
                name="run_reranks_or_judges",
            ),
        ]

    def __str__(self):
        return f"{self.annotator} on {self.dataset} ({self.status})"


class ShardStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


SHARD_TRANSITIONS = {
    ShardStatus.QUEUED: {ShardStatus.RUNNING, ShardStatus.FAILED},
    # back to queued: its run stopped (cancelled, failed) or its worker went silent and it is handed out again
    ShardStatus.RUNNING: {ShardStatus.DONE, ShardStatus.FAILED, ShardStatus.QUEUED},
    ShardStatus.FAILED: {ShardStatus.QUEUED},
    ShardStatus.DONE: set(),
}


class RankingShard(models.Model):
    """One slice of a run's top-K work: query rows [start, stop) of one direction, `chunks` top-K chunks.

    Any `gpu` worker takes a queued shard (annotator.ranking.services.lifecycle.shard_claim) and commits it chunk by
    chunk, each chunk's candidates in the same transaction as `chunks_done`, so a shard whose worker dies
    resumes at its first uncommitted chunk and a done shard is never computed again. Shard boundaries are
    chunk boundaries, so the candidates are exactly those of one worker ranking the whole run.
    """

    run = models.ForeignKey(RankingRun, on_delete=models.CASCADE, related_name="shards")
    direction = models.CharField(max_length=3, choices=Direction.choices)
    start = models.PositiveIntegerField()  # first query row (in id order) of the direction's query space
    stop = models.PositiveIntegerField()
    chunk_first = models.PositiveIntegerField()  # index of its first chunk in the direction
    chunks = models.PositiveIntegerField()
    chunks_done = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0)  # query rows x targets: the heaviest shards are handed out first
    status = models.CharField(max_length=16, choices=ShardStatus.choices, default=ShardStatus.QUEUED)
    attempts = models.PositiveIntegerField(default=0)  # claims by a worker (1 when nothing went wrong)
    task_id = models.CharField(max_length=64, blank=True)  # the Celery task working on it
    worker = models.CharField(max_length=200, blank=True)  # host and process, for the operator
    error = models.TextField(blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    beat_at = models.DateTimeField(null=True, blank=True)  # last committed chunk (or claim)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "direction", "start"]
        constraints = [
            models.UniqueConstraint(fields=["run", "direction", "start"], name="rankingshard_unique_range"),
            models.CheckConstraint(condition=models.Q(status__in=ShardStatus.values), name="rankingshard_status_valid"),
            models.CheckConstraint(
                condition=models.Q(direction__in=Direction.values), name="rankingshard_direction_valid"
            ),
            models.CheckConstraint(condition=models.Q(stop__gt=models.F("start")), name="rankingshard_range_nonempty"),
            models.CheckConstraint(
                condition=models.Q(chunks_done__lte=models.F("chunks")), name="rankingshard_progress_bounded"
            ),
            models.CheckConstraint(
                condition=~models.Q(status=ShardStatus.DONE) | models.Q(chunks_done=models.F("chunks")),
                name="rankingshard_done_is_complete",
            ),
        ]
        indexes = [models.Index(fields=["status", "beat_at"], name="rankingshard_status_beat")]

    def __str__(self):
        return f"run {self.run_id} {self.direction} [{self.start}, {self.stop}) {self.status}"


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
