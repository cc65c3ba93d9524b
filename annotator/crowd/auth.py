"""The log-in backend (Django's ModelBackend) that reads the user with their
role and worker in one query.

Every request of a logged-in person loads the user from the session; crowd workers send one request per
autosaved item, and each needs the role (Profile) and the Worker too. Joining both here saves a query on
every request, and the query is written once as SQL (`annotator.crowd.rows`): building it with the ORM cost
ten times what running it does. Passwords, permissions and `is_active` are checked exactly as ModelBackend
does.
"""

from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db import connection

from annotator.crowd.rows import attach, fetch_one, ids_fit, instances, select_list, table


@cache
def _user_sql(vendor: str) -> str:
    from annotator.core.models.accounts import Profile
    from annotator.crowd.models.crowd import Worker

    User = get_user_model()
    return (
        f"SELECT {select_list(User, 'u')}, {select_list(Profile, 'p')}, {select_list(Worker, 'w')}"
        f" FROM {table(User)} u LEFT JOIN {table(Profile)} p ON p.user_id = u.id"
        f" LEFT JOIN {table(Worker)} w ON w.user_id = u.id WHERE u.id = %s"
    )


def user_with_role(user_id) -> object | None:
    """The user with `profile` and `worker` already attached (None where they have none), or None."""
    from annotator.core.models.accounts import Profile
    from annotator.crowd.models.crowd import Worker

    try:
        user_id = int(user_id)  # the session holds it as text
    except (TypeError, ValueError):
        return None
    if not ids_fit(user_id):
        return None
    row = fetch_one(_user_sql(connection.vendor), [user_id])
    if row is None:
        return None
    user, profile, worker = instances(row, get_user_model(), Profile, Worker)
    attach(user, "profile", profile)
    attach(user, "worker", worker)
    if profile is not None:
        attach(profile, "user", user)
    if worker is not None:
        attach(worker, "user", user)
    return user


class AccountBackend(ModelBackend):
    def get_user(self, user_id):
        user = user_with_role(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
