"""API tokens (DRF authtoken): one per user, replaced when a new one is made."""

from django.db import transaction


def token_create(*, user):
    """Make a fresh token for `user`, replacing (and so revoking) any older one. Runs in one transaction."""
    from rest_framework.authtoken.models import Token

    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def token_revoke(*, user) -> bool:
    """Delete the user's token; True if there was one. Idempotent."""
    from rest_framework.authtoken.models import Token

    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)
