from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.campaigns.models.campaign import Campaign, Hit, HitItem


class Worker(models.Model):
    """A person doing HITs: a local account, or an external (MTurk) worker id."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="worker"
    )
    external_id = models.CharField(max_length=64, null=True, blank=True, unique=True)  # MTurk WorkerId
    pseudonym = models.CharField(max_length=32, unique=True)  # stable, shown in exports instead of ids
    # The platform-wide gold tally, kept up to date by gold scoring; staff only (the admin). Requesters see
    # and decide on their own record of the worker, WorkerStanding.
    gold_correct = models.PositiveIntegerField(default=0)
    gold_total = models.PositiveIntegerField(default=0)
    # A platform block, by staff only: no new HITs on any campaign. A requester's block is WorkerStanding.
    blocked = models.BooleanField(default=False)
    blocked_reason = models.CharField(max_length=500, blank=True)
    auto_accept_next = models.BooleanField(default=False)  # hand the next HIT on submit
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False) | Q(external_id__isnull=False), name="worker_has_identity"
            ),
            models.CheckConstraint(condition=Q(gold_correct__lte=models.F("gold_total")), name="worker_gold_counts"),
        ]

    def __str__(self):
        return self.pseudonym


class QualificationAttempt(models.Model):
    """One try at a campaign's qualification test (gold items only); kept, never overwritten."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualification_attempts")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="qualification_attempts")
    items = models.JSONField(default=list)  # pair ids shown, in order
    answers = models.JSONField(default=dict, blank=True)
    score = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True)  # null while in progress
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]


class AssignmentStatus(models.TextChoices):
    RESERVED = "reserved", "Reserved"
    SUBMITTED = "submitted", "Submitted"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    RETURNED = "returned", "Returned"
    EXPIRED = "expired", "Expired"


ASSIGNMENT_TRANSITIONS = {
    AssignmentStatus.RESERVED: {AssignmentStatus.SUBMITTED, AssignmentStatus.RETURNED, AssignmentStatus.EXPIRED},
    AssignmentStatus.SUBMITTED: {AssignmentStatus.APPROVED, AssignmentStatus.REJECTED},
    # A requester may overturn a decision; both directions are kept in the history.
    AssignmentStatus.APPROVED: {AssignmentStatus.REJECTED},
    AssignmentStatus.REJECTED: {AssignmentStatus.APPROVED},
    AssignmentStatus.RETURNED: set(),
    AssignmentStatus.EXPIRED: set(),
}
# Assignments that count against a HIT's redundancy.
ACTIVE_ASSIGNMENT_STATUSES = [AssignmentStatus.RESERVED, AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED]
# Review reasons stored in Assignment.flags (a non-empty list means "in the review queue").
FLAG_GOLD_FAILED = "gold_failed"
FLAG_TOO_FAST = "too_fast"
FLAG_SAME_ANSWER = "same_answer"
FLAG_LOW_TRUST = "low_trust"
FLAG_PEER_DISAGREEMENT = "disagrees_with_peers"
FLAG_COLLUSION = "collusion"
FLAG_LABELS = {
    FLAG_GOLD_FAILED: "a gold item answered wrong",
    FLAG_TOO_FAST: "implausibly fast",
    FLAG_SAME_ANSWER: "the same answer throughout",
    FLAG_LOW_TRUST: "the worker's gold record looks like guessing",
    FLAG_PEER_DISAGREEMENT: "disagrees with the other workers on most pairs",
    FLAG_COLLUSION: "answers like another worker's far beyond chance (see the collusion groups)",
}


class Assignment(models.Model):
    """One worker's lease on one Hit. Transitions are services; each is kept in AssignmentEvent."""

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=16, choices=AssignmentStatus.choices, default=AssignmentStatus.RESERVED)
    reserved_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    external_assignment_id = models.CharField(max_length=64, null=True, blank=True, unique=True)  # MTurk
    # Quality control, filled by gold scoring after submission.
    gold_correct = models.PositiveIntegerField(null=True, blank=True)
    gold_total = models.PositiveIntegerField(null=True, blank=True)
    flags = models.JSONField(default=list, blank=True)  # why it went to review
    scored_at = models.DateTimeField(null=True, blank=True)
    auto_approve_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-reserved_at"]
        constraints = [
            # Never the same HIT twice to one worker, whatever became of the first lease.
            models.UniqueConstraint(fields=["hit", "worker"], name="assignment_one_per_worker_hit"),
            models.CheckConstraint(condition=Q(status__in=AssignmentStatus.values), name="assignment_status_valid"),
            models.CheckConstraint(
                condition=Q(status__in=["reserved", "returned", "expired"]) | Q(submitted_at__isnull=False),
                name="assignment_submitted_has_time",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "expires_at"], name="assignment_status_expiry"),
            # The sweep's look for submissions whose score never came: small, as scoring follows within seconds.
            models.Index(
                fields=["submitted_at"],
                condition=Q(scored_at__isnull=True, submitted_at__isnull=False),
                name="assignment_unscored",
            ),
        ]

    def __str__(self):
        return f"assignment {self.pk} ({self.status})"


class AssignmentEvent(models.Model):
    """Every transition of an Assignment: from, to, who, when, why."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="events")
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    reason = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]


class Choice(models.TextChoices):
    YES = "yes", "100% YES"
    PARTIALLY_YES = "partially_yes", "Partially YES, but ..."
    MOSTLY_NO = "mostly_no", "Mostly NO, because ..."
    NO = "no", "100% NO"


POSITIVE_CHOICES = {Choice.YES, Choice.PARTIALLY_YES}
STRICT_POSITIVE_CHOICES = {Choice.YES}
CHOICES_NEEDING_SHORTCOMINGS = {Choice.PARTIALLY_YES, Choice.MOSTLY_NO}


class Shortcoming(models.TextChoices):
    EXTRA_CONCEPTS = "extra_concepts", "describes concepts that do not appear in the image"
    MISSES_MAIN = "misses_main", "does not describe the main concepts in the image"
    WRONG_WAY = "wrong_way", "describes the main concepts in a wrong way"
    GRAMMAR = "grammar", "is grammatically incorrect"


class WrongAspect(models.TextChoices):
    QUANTITY = "quantity", "Quantity"
    COLOR = "color", "Color"
    SPECIES = "species", "Species"
    GENDER = "gender", "Gender"
    AGE = "age", "Age"
    ACTION = "action", "Action"
    EMOTION = "emotion", "Emotion"
    LOCATION = "location", "Location"
    ORIENTATION = "orientation", "Orientation"
    OTHER = "other", "Other"


class Answer(models.Model):
    """One worker's judgement of one HitItem, autosaved as they go, frozen on submit."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(HitItem, on_delete=models.CASCADE, related_name="answers")
    choice = models.CharField(max_length=16, choices=Choice.choices, blank=True)  # four_choice
    score = models.FloatField(null=True, blank=True)  # similarity, 0-5
    shortcomings = models.JSONField(default=list, blank=True)  # Shortcoming values
    wrong_aspects = models.JSONField(default=list, blank=True)  # WrongAspect values
    comment = models.TextField(blank=True)
    seconds_spent = models.FloatField(default=0.0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item"], name="answer_one_per_assignment_item"),
            models.CheckConstraint(condition=Q(choice="") | Q(choice__in=Choice.values), name="answer_choice_valid"),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=5), name="answer_score_range"
            ),
            models.CheckConstraint(condition=Q(seconds_spent__gte=0), name="answer_seconds_nonnegative"),
        ]

    def __str__(self):
        return f"answer {self.assignment_id}/{self.item_id}"
