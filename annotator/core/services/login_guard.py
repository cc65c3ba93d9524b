"""Log-in guessing: growing delays per user name and per address, on top of django-axes' pair lock-out.

django-axes locks one (user name, address) pair after AXES_FAILURE_LIMIT failures, so a guesser at one
address cannot keep the owner out from any other. A guesser spread over many addresses is slowed down
here instead: once a user name has had LOGIN_SLOWDOWN_USERNAME_AFTER failures (from any addresses), each
further failure makes the next try for that name wait LOGIN_SLOWDOWN_BASE_SECONDS, doubling with every
failure, at most LOGIN_SLOWDOWN_MAX_SECONDS. An address that tries many user names is slowed down the same
way after LOGIN_SLOWDOWN_ADDRESS_AFTER failures. A try refused inside its wait is not a failure (nothing
was checked), so waiting does not make the wait longer. The owner, logging in from an address they logged
in from before (axes' access log), is not slowed down by their user name's count.

Counts live in the default cache (shared by all server processes with CACHE_URL) and are forgotten
LOGIN_SLOWDOWN_FORGET_SECONDS after the last failure. Two tries racing each other may both pass a check;
the counts themselves are atomic (cache.incr), so the delays still grow.
"""

import hashlib
import math
import time

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessLog
from django.conf import settings
from django.core.cache import cache

_clock = time.time  # tests move it forward instead of sleeping


def _subjects(*, username: str, address: str) -> list[tuple[str, int]]:
    """The counters one try touches, each with the failures it is allowed before delays start."""
    subjects = []
    if username:
        digest = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
        subjects.append((f"login-failures:user:{digest}", settings.LOGIN_SLOWDOWN_USERNAME_AFTER))
    if address:
        subjects.append((f"login-failures:address:{address}", settings.LOGIN_SLOWDOWN_ADDRESS_AFTER))
    return subjects


def login_delay_seconds(*, failures: int, allowed: int) -> float:
    """How long the next try waits after the `failures`-th failure when `allowed` pass without a wait."""
    if failures <= allowed:
        return 0.0
    doublings = min(failures - allowed - 1, 60)
    return min(settings.LOGIN_SLOWDOWN_MAX_SECONDS, settings.LOGIN_SLOWDOWN_BASE_SECONDS * 2**doublings)


def _known_address(*, username: str, address: str) -> bool:
    return AccessLog.objects.filter(username__iexact=username.strip(), ip_address=address).exists()


def login_wait(*, username: str, address: str) -> int:
    """Seconds this try must still wait (0: it may go ahead). Reads the cache and axes' access log only."""
    now = _clock()
    wait = 0.0
    for key, allowed in _subjects(username=username, address=address):
        failures = cache.get(f"{key}:count") or 0
        last = cache.get(f"{key}:last")
        if last is None or failures <= allowed:
            continue
        if key.startswith("login-failures:user:") and _known_address(username=username, address=address):
            continue
        wait = max(wait, last + login_delay_seconds(failures=failures, allowed=allowed) - now)
    return math.ceil(wait) if wait > 0 else 0


def login_failure_record(*, username: str, address: str) -> None:
    """Count one failed log-in for the user name and the address.

    No lock: the counts are atomic cache increments, the time of the last failure is last-write-wins.
    Not idempotent: each call is one more failure.
    """
    forget = settings.LOGIN_SLOWDOWN_FORGET_SECONDS
    now = _clock()
    for key, _allowed in _subjects(username=username, address=address):
        cache.add(f"{key}:count", 0, timeout=forget)
        try:
            cache.incr(f"{key}:count")
        except ValueError:  # expired between add and incr
            cache.set(f"{key}:count", 1, timeout=forget)
        cache.touch(f"{key}:count", timeout=forget)
        cache.set(f"{key}:last", now, timeout=forget)


class LoginGuardHandler(AxesDatabaseHandler):
    """django-axes' database handler (the pair lock-out, its logs) plus the growing delays above.

    A try inside its wait is refused the way axes refuses a locked pair (request.axes_locked_out), so it
    gets the same 429 page (annotator.core.views.lockout), with this wait as its Retry-After.
    """

    def is_allowed(self, request, credentials: dict | None = None) -> bool:
        if not super().is_allowed(request, credentials):
            return False
        if credentials is None:
            return True  # a view decorated with axes_dispatch asks before any credentials exist
        username = get_client_username(request, credentials) or ""
        wait = login_wait(username=username, address=request.axes_ip_address or "")
        if wait:
            request.login_retry_after = wait
            request.axes_locked_out = True  # refused like a locked pair: not counted, answered by the lock-out page
            return False
        return True

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        if request is not None and not getattr(request, "axes_locked_out", False):
            login_failure_record(
                username=get_client_username(request, credentials) or "", address=request.axes_ip_address or ""
            )
        return super().user_login_failed(sender, credentials, request, **kwargs)
