"""Audit events for what django-axes decides (the log-in path is its own, not one of our services)."""

from axes.signals import user_locked_out
from django.contrib.auth import get_user_model
from django.dispatch import receiver

from annotator.core.models.audit import AuditAction
from annotator.core.services.audit import audit_record


@receiver(user_locked_out, dispatch_uid="vericap-audit-lockout")
def audit_lockout(sender, request=None, username=None, ip_address=None, **kwargs):
    user = get_user_model().objects.filter(username=username).first() if username else None
    audit_record(
        action=AuditAction.LOGIN_LOCKOUT,
        subject_user=user,
        # The name tried is kept even when no such account exists: that is what an attacker guessed.
        detail={"username": (username or "")[:150]},
        ip=ip_address,
    )
