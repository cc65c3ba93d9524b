"""API tokens (DRF authtoken): one per user, replaced when a new one is made."""

from django.db import transaction

from annotator.core.models.audit import AuditAction
from annotator.core.services.audit import audit_record


def token_create(*, user):
    """Make a fresh token for `user`, replacing (and so revoking) any older one. Runs in one transaction."""
    from rest_framework.authtoken.models import Token

    with transaction.atomic():
        replaced = Token.objects.filter(user=user).delete()[0] > 0
        token = Token.objects.create(user=user)
        audit_record(action=AuditAction.TOKEN_CREATE, actor=user, subject_user=user, detail={"replaced": replaced})
        return token


def token_revoke(*, user) -> bool:
    """Delete the user's token; True if there was one. Idempotent."""
    from rest_framework.authtoken.models import Token

    with transaction.atomic():
        deleted, _ = Token.objects.filter(user=user).delete()
        if deleted:
            audit_record(action=AuditAction.TOKEN_REVOKE, actor=user, subject_user=user)
    return bool(deleted)
