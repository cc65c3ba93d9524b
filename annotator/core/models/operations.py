from django.db import models


class SweepRun(models.Model):
    """One pass of the sweep (annotator/operations/services/sweep.py): what it found late and what it did about it.

    Kept for a day; the operations page shows the latest ones, and their age tells whether beat and a
    worker are running at all.
    """

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    scored = models.PositiveIntegerField(default=0)  # submissions whose scoring message was lost, scored here
    expired = models.PositiveIntegerField(default=0)  # leases past their expiry, released
    requeued = models.JSONField(default=dict, blank=True)  # kind -> ids queued again
    problems = models.JSONField(default=list, blank=True)  # what it could not fix, in words

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["started_at"], name="sweeprun_started")]

    def __str__(self):
        return f"sweep {self.started_at:%Y-%m-%d %H:%M:%S}"


class RequeueKind(models.TextChoices):
    IMPORT = "import", "Dataset import"
    BUILD = "build", "Campaign build"
    RANKING = "ranking", "Ranking run"
    RANKING_SHARD = "ranking_shard", "Ranking shard"
    EXPORT = "export", "Label export"
    MTURK_DECISION = "mturk_decision", "MTurk decision"


class SweepRequeue(models.Model):
    """The sweep queued this job's task again (its message was lost or its worker died): when and how often.

    One row per job; it keeps the sweep from queuing a job that waits in a long queue again every pass,
    and tells the requester why a job is late.
    """

    kind = models.CharField(max_length=16, choices=RequeueKind.choices)
    object_id = models.BigIntegerField()
    queued_at = models.DateTimeField()
    times = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id"], name="sweeprequeue_one_per_job"),
            models.CheckConstraint(condition=models.Q(kind__in=RequeueKind.values), name="sweeprequeue_kind_valid"),
        ]

    def __str__(self):
        return f"{self.kind} {self.object_id} queued again x{self.times}"
