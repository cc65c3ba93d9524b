from django.db import models
from django.db.models import Q

from annotator.crowd.models.crowd import Assignment


class DecisionKind(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"


class ExternalDecisionStatus(models.TextChoices):
    PENDING = "pending", "Waiting to be sent"
    SENT = "sent", "Sent to MTurk"
    FAILED = "failed", "Not accepted by MTurk"


EXTERNAL_DECISION_TRANSITIONS = {
    # Pending to pending: an attempt failed and another follows, or the requester changed the decision.
    ExternalDecisionStatus.PENDING: {
        ExternalDecisionStatus.PENDING,
        ExternalDecisionStatus.SENT,
        ExternalDecisionStatus.FAILED,
    },
    ExternalDecisionStatus.SENT: {ExternalDecisionStatus.PENDING},  # the requester overturned the decision
    ExternalDecisionStatus.FAILED: {ExternalDecisionStatus.PENDING},  # the requester's Retry, or a new decision
}


class ExternalDecision(models.Model):
    """The local approve or reject of an MTurk assignment, to be sent to MTurk: MTurk pays on it.

    One row per assignment, written in the transaction of the local decision and sent by a Celery task
    afterwards (annotator.quality.services.external_decisions). The row holds the latest decision; once
    it is `sent`, sending it again does nothing, so a worker is never paid twice for one approval.
    """

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="external_decision")
    decision = models.CharField(max_length=8, choices=DecisionKind.choices)
    reason = models.CharField(max_length=1000, blank=True)  # the worker sees it on MTurk
    # An approval after a rejection MTurk already has must say so (ApproveAssignment's OverrideRejection).
    overrides_rejection = models.BooleanField(default=False)
    status = models.CharField(
        max_length=8, choices=ExternalDecisionStatus.choices, default=ExternalDecisionStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)  # since the decision was made or last retried
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(decision__in=DecisionKind.values), name="external_decision_kind_valid"),
            models.CheckConstraint(
                condition=Q(status__in=ExternalDecisionStatus.values), name="external_decision_status_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status=ExternalDecisionStatus.SENT) | Q(sent_at__isnull=False),
                name="external_decision_sent_has_time",
            ),
        ]
        # The sweep's look for decisions whose message was lost, and the requester's list of failed ones.
        indexes = [models.Index(fields=["status", "updated_at"], name="external_decision_status")]

    def __str__(self):
        return f"{self.decision} assignment {self.assignment_id} ({self.status})"
