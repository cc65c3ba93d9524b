"""Caption refinement (MSCOCO-FG Sec. 3.2.2-3.2.4): caption versions, proposed finer captions, and the
correction HITs in which a worker accepts a proposal or corrects it with as few edits as possible."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.crowd.models.crowd import Worker
from annotator.datasets.models.dataset import Caption, Dataset


class VersionSource(models.TextChoices):
    ORIGINAL = "original", "The dataset's original text"
    PROPOSAL = "proposal", "A proposed refinement, accepted as it was"
    CORRECTION = "correction", "A proposal corrected by a worker"


class CaptionVersion(models.Model):
    """One text of a caption. Version 1 is the original; the highest version is the caption's current text.

    Rows are never changed: a new text is a new version, so the history says who changed what and when.
    """

    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    text = models.TextField()
    source = models.CharField(max_length=16, choices=VersionSource.choices)
    generator = models.CharField(max_length=64, blank=True)  # which generator proposed it
    proposal = models.ForeignKey(
        "RefinementProposal", null=True, blank=True, on_delete=models.SET_NULL, related_name="versions"
    )
    worker = models.ForeignKey(Worker, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    edit_distance = models.PositiveIntegerField(null=True, blank=True)  # characters changed from the proposal
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["caption_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["caption", "version"], name="caption_version_unique"),
            models.CheckConstraint(condition=Q(version__gte=1), name="caption_version_positive"),
            models.CheckConstraint(condition=Q(source__in=VersionSource.values), name="caption_version_source_valid"),
            models.CheckConstraint(
                condition=Q(version=1, source="original") | (Q(version__gt=1) & ~Q(source="original")),
                name="caption_version_original_first",
            ),
        ]

    def __str__(self):
        return f"{self.caption} v{self.version}"


class RefinementStatus(models.TextChoices):
    DRAFT = "draft", "Draft: collecting proposals"
    SCORING = "scoring", "Scoring proposals"
    READY = "ready", "Scored"
    LIVE = "live", "Live: workers correct"
    FINISHED = "finished", "Finished"


REFINEMENT_TRANSITIONS = {
    RefinementStatus.DRAFT: {RefinementStatus.SCORING, RefinementStatus.READY},
    RefinementStatus.SCORING: {RefinementStatus.READY, RefinementStatus.DRAFT},
    RefinementStatus.READY: {RefinementStatus.LIVE, RefinementStatus.SCORING},
    RefinementStatus.LIVE: {RefinementStatus.FINISHED},
    RefinementStatus.FINISHED: set(),
}


class Refinement(models.Model):
    """One round of refinement on a dataset: proposals, their filter, the correction HITs."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="refinements")
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="refinements")
    status = models.CharField(max_length=16, choices=RefinementStatus.choices, default=RefinementStatus.DRAFT)
    scorer = models.CharField(max_length=32, blank=True)  # annotator kind that filters proposals; "" keeps all
    reward_cents = models.PositiveIntegerField(default=5)
    lease_minutes = models.PositiveIntegerField(default=15)
    report = models.JSONField(default=dict, blank=True)  # the last import, generation and filter summaries
    error = models.TextField(blank=True)  # why the last filter failed; cleared by the next one
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)  # when the current/last filter was queued
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RefinementStatus.values), name="refinement_status_valid"),
        ]

    def __str__(self):
        return self.name


class ProposalStatus(models.TextChoices):
    PENDING = "pending", "Not scored yet"
    KEPT = "kept", "Kept (scores higher than the original)"
    DROPPED = "dropped", "Dropped by the filter"
    DONE = "done", "Accepted or corrected by a worker"


class GoldExpect(models.TextChoices):
    NONE = "", "Not gold"
    ACCEPT = "accept", "Right: the worker should accept it"
    FIX = "fix", "Wrong: the worker should remove the wrong words"


class RefinementProposal(models.Model):
    """A proposed finer text for one caption; kept proposals are the correction HITs (one each)."""

    refinement = models.ForeignKey(Refinement, on_delete=models.CASCADE, related_name="proposals")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    original_text = models.TextField()  # the caption's text the proposal was made from
    text = models.TextField()
    generator = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=ProposalStatus.choices, default=ProposalStatus.PENDING)
    original_score = models.FloatField(null=True, blank=True)
    proposal_score = models.FloatField(null=True, blank=True)
    gold = models.CharField(max_length=8, choices=GoldExpect.choices, blank=True, default="")
    gold_wrong_words = models.JSONField(default=list, blank=True)  # words a FIX gold expects to be removed
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["refinement_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["refinement", "caption", "gold"], name="proposal_one_per_caption"),
            models.CheckConstraint(condition=Q(status__in=ProposalStatus.values), name="proposal_status_valid"),
            models.CheckConstraint(condition=Q(gold__in=GoldExpect.values), name="proposal_gold_valid"),
        ]

    def __str__(self):
        return f"proposal {self.pk} for {self.caption}"


class CorrectionStatus(models.TextChoices):
    RESERVED = "reserved", "Reserved"
    EXPIRED = "expired", "Expired"
    REVIEW = "review", "Waiting for review"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


ACTIVE_CORRECTION_STATUSES = (CorrectionStatus.RESERVED, CorrectionStatus.REVIEW, CorrectionStatus.APPROVED)
CORRECTION_TRANSITIONS = {
    CorrectionStatus.RESERVED: {
        CorrectionStatus.EXPIRED,
        CorrectionStatus.REVIEW,
        CorrectionStatus.APPROVED,
        CorrectionStatus.REJECTED,
    },
    CorrectionStatus.REVIEW: {CorrectionStatus.APPROVED, CorrectionStatus.REJECTED},
    CorrectionStatus.EXPIRED: set(),
    CorrectionStatus.APPROVED: set(),
    CorrectionStatus.REJECTED: set(),
}


class CorrectionAction(models.TextChoices):
    ACCEPT = "accept", "Accepted the proposal"
    CORRECT = "correct", "Corrected the proposal"


class CorrectionAssignment(models.Model):
    """One worker's lease on one correction HIT (a proposal) and what they sent back."""

    proposal = models.ForeignKey(RefinementProposal, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="correction_assignments")
    status = models.CharField(max_length=16, choices=CorrectionStatus.choices, default=CorrectionStatus.RESERVED)
    reserved_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    action = models.CharField(max_length=8, choices=CorrectionAction.choices, blank=True)
    text = models.TextField(blank=True)
    edit_distance = models.PositiveIntegerField(null=True, blank=True)
    seconds_spent = models.FloatField(default=0.0)
    is_gold = models.BooleanField(default=False)  # the proposal's gold flag, here for the constraint below
    gold_passed = models.BooleanField(null=True, blank=True)  # null unless the proposal is gold
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-reserved_at"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "worker"], name="correction_one_per_worker"),
            # One person works a proposal at a time, and a proposal is corrected once (gold goes to many).
            models.UniqueConstraint(
                fields=["proposal"],
                condition=Q(status__in=["reserved", "review", "approved"], is_gold=False),
                name="correction_one_active_per_proposal",
            ),
            models.CheckConstraint(condition=Q(status__in=CorrectionStatus.values), name="correction_status_valid"),
            models.CheckConstraint(
                condition=Q(action="") | Q(action__in=CorrectionAction.values), name="correction_action_valid"
            ),
            models.CheckConstraint(condition=Q(seconds_spent__gte=0), name="correction_seconds_nonnegative"),
        ]

    def __str__(self):
        return f"correction {self.pk}"
