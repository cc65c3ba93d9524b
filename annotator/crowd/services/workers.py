"""Crowd workers: who they are (a local account or an MTurk worker id) and how they sign up."""

import re
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Profile, Role
from annotator.core.services.people import USERNAME_TAKEN, credentials_check
from annotator.crowd.models.crowd import Worker

EXTERNAL_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _new_pseudonym() -> str:
    # 40 random bits: stable once stored, unrelated to the user id or the MTurk id (exports show it).
    return f"w-{secrets.token_hex(5)}"


def _worker_get_or_create(**identity) -> Worker:
    """Get or create the Worker for one identity; safe when two requests race (the unique column decides)."""
    worker = Worker.objects.filter(**identity).first()
    if worker is not None:
        return worker
    for _ in range(5):
        try:
            with transaction.atomic():
                return Worker.objects.create(pseudonym=_new_pseudonym(), **identity)
        except IntegrityError:
            worker = Worker.objects.filter(**identity).first()
            if worker is not None:  # the other request won the race
                return worker
            # else a pseudonym collision (1 in a trillion): draw again
    raise ApplicationError("Could not create a worker record, please try again.", status=503)


def worker_for_user(*, user) -> Worker:
    """The Worker of a local account, created on first use with a stable random pseudonym.

    Idempotent; concurrent first calls for one user yield one Worker (unique user column).
    """
    if not user.is_authenticated:
        raise ApplicationError("Log in first.", status=403)
    return _worker_get_or_create(user=user)


def worker_for_external(*, external_id: str) -> Worker:
    """The Worker of an external (MTurk) worker id, created on first arrival. Idempotent."""
    external_id = (external_id or "").strip()
    if not EXTERNAL_ID_PATTERN.match(external_id):
        raise ApplicationError("The worker id is missing or malformed.")
    return _worker_get_or_create(external_id=external_id)


def worker_signup(*, username: str, password: str, email: str = "", invite_code: str = "") -> Worker:
    """Create a local worker account (User + Profile(role=worker) + Worker) in one transaction.

    The invite code is checked against settings.SIGNUP_INVITE_CODE (empty = open sign-up). Not idempotent
    by design: a second call with the same username is refused (400).
    """
    required_code = getattr(settings, "SIGNUP_INVITE_CODE", "") or ""
    if required_code and not secrets.compare_digest(invite_code.strip(), required_code):
        raise ApplicationError("The invite code is not valid.", extra={"field": "invite_code"})
    candidate = credentials_check(username=username, password=password, email=email)
    User = get_user_model()
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=candidate.username, email=candidate.email, password=password)
            Profile.objects.create(user=user, role=Role.WORKER)
            return Worker.objects.create(user=user, pseudonym=_new_pseudonym())
    except IntegrityError:
        raise ApplicationError(USERNAME_TAKEN, extra={"field": "username"}) from None


def worker_set_auto_accept(*, worker: Worker, enabled: bool) -> Worker:
    """Switch "hand me the next HIT automatically"; idempotent, no lock needed (one column, last write wins)."""
    Worker.objects.filter(pk=worker.pk).update(auto_accept_next=bool(enabled))
    worker.auto_accept_next = bool(enabled)
    return worker
