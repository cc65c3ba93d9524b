"""Accounts of requesters and researchers: made by an operator (staff), never by sign-up.

Crowd workers sign up themselves (annotator.crowd.services.workers); a requester spends money and sees
workers' answers, a researcher sees shared labels, so those accounts are made by someone who runs the
platform, on the accounts page, in the Django admin or through the API, and each one leaves an audit event.
"""

import re

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Profile, Role
from annotator.core.models.audit import AuditAction
from annotator.core.selectors.access import is_operator
from annotator.core.services.audit import audit_record

USERNAME_PATTERN = re.compile(r"^[\w.@+-]{3,150}$")
USERNAME_TAKEN = "That user name cannot be used; choose another."
MADE_BY_OPERATORS = (Role.REQUESTER, Role.RESEARCHER)


def credentials_check(*, username: str, password: str, email: str = ""):
    """A new account's user name and password, checked: returns the unsaved User (400 when refused).

    The shape of the name and the password are checked before whether the name is taken."""
    username = (username or "").strip()
    if not USERNAME_PATTERN.match(username):
        raise ApplicationError(
            "Choose a user name of 3 to 150 letters, digits or . @ + - _ characters.", extra={"field": "username"}
        )
    User = get_user_model()
    candidate = User(username=username, email=(email or "").strip())
    try:
        password_validation.validate_password(password, user=candidate)
    except ValidationError as error:
        extra = {"field": "password", "errors": error.messages}
        raise ApplicationError(" ".join(error.messages), extra=extra) from error
    # Last: whether a name is taken is said only to a request that is valid in every other way, so probing
    # names costs a whole valid sign-up each (and sign-ups are limited per address).
    if User.objects.filter(username__iexact=username).exists():
        raise ApplicationError(USERNAME_TAKEN, extra={"field": "username"})
    return candidate


def account_create(*, actor, username: str, password: str, role: str, email: str = ""):
    """Make a requester or researcher account (User + Profile) in one transaction, with an audit event.

    Only operators may (403 otherwise); the user name and password are checked as at sign-up (400). Not
    idempotent: a second call with the same user name is refused.
    """
    if not is_operator(actor):
        raise ApplicationError("Only staff can make requester and researcher accounts.", status=403)
    if role not in MADE_BY_OPERATORS:
        raise ApplicationError(
            f"An operator makes requester or researcher accounts; crowd workers sign up themselves (not {role!r}).",
            extra={"field": "role"},
        )
    candidate = credentials_check(username=username, password=password, email=email)
    try:
        with transaction.atomic():
            user = get_user_model().objects.create_user(
                username=candidate.username, email=candidate.email, password=password
            )
            Profile.objects.create(user=user, role=role)
            audit_record(action=AuditAction.ACCOUNT_CREATE, actor=actor, subject_user=user, detail={"role": str(role)})
            return user
    except IntegrityError:
        raise ApplicationError(USERNAME_TAKEN, extra={"field": "username"}) from None
