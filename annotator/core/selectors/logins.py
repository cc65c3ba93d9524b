"""Failed log-ins an account's owner is told about (django-axes' failure log, AXES_ENABLE_ACCESS_FAILURE_LOG)."""

from axes.models import AccessFailureLog


def login_failures_since_last_login(*, user) -> int:
    """Failed log-ins for this user name (any address, any letter case) since the user's last log-in, or since
    the account was made. Read before the log-in that is happening now moves `last_login`. Axes keeps at most
    AXES_ACCESS_FAILURE_LOG_PER_USER_LIMIT (1,000) rows per user name, so that is the most this says."""
    since = user.last_login or user.date_joined
    return AccessFailureLog.objects.filter(username__iexact=user.get_username(), attempt_time__gt=since).count()
