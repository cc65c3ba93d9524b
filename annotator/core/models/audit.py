"""Audit events: who did what to whom, for the actions that matter to security (blocks, overrides, tokens,
log-in lock-outs). Written by annotator.core.services.audit; read on /account/audit/."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class AuditAction(models.TextChoices):
    WORKER_BLOCK = "worker_block", "Worker blocked"
    WORKER_UNBLOCK = "worker_unblock", "Worker unblocked"
    WORKER_SOFT_BLOCK = "worker_soft_block", "Worker soft-blocked automatically"
    WORKER_SOFT_UNBLOCK = "worker_soft_unblock", "Worker soft block lifted"
    WORKER_PLATFORM_BLOCK = "worker_platform_block", "Worker blocked on the whole platform"
    WORKER_PLATFORM_UNBLOCK = "worker_platform_unblock", "Worker platform block lifted"
    APPROVAL_OVERRIDE = "approval_override", "Decision overturned"
    TOKEN_CREATE = "token_create", "API token created"
    TOKEN_REVOKE = "token_revoke", "API token revoked"
    LOGIN_LOCKOUT = "login_lockout", "Log-in locked out after repeated failures"
    GOLD_RETIRE = "gold_retire", "Gold pair retired"
    ACCOUNT_CREATE = "account_create", "Requester or researcher account made"


class AuditEvent(models.Model):
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Whose record it touches: a user (token owner, locked-out account, the requester whose standing with a
    # worker changed) and/or a worker, a campaign.
    subject_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    worker = models.ForeignKey("annotator.Worker", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    campaign = models.ForeignKey(
        "annotator.Campaign", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    detail = models.JSONField(default=dict, blank=True)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["action", "created_at"], name="audit_action_time")]
        constraints = [models.CheckConstraint(condition=Q(action__in=AuditAction.values), name="audit_action_valid")]

    def __str__(self):
        return f"{self.action} at {self.created_at:%Y-%m-%d %H:%M}"
