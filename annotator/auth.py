"""Who a user is: their role, and the log-in backend (Django's ModelBackend) that reads the user with their
role and worker in one query.

Every request of a logged-in person loads the user from the session; crowd workers send one request per
autosaved item, and each needs the role (Profile) and the Worker too. Joining both here saves a query on
every request. Passwords, permissions and `is_active` are checked exactly as ModelBackend does.
"""

from django.contrib.auth.backends import ModelBackend

from annotator.models import Role


def user_role(user) -> str | None:
    """The user's role; staff act as requesters. None for anonymous users."""
    if not user.is_authenticated:
        return None
    if user.is_staff or user.is_superuser:
        return Role.REQUESTER
    profile = getattr(user, "profile", None)
    return profile.role if profile else None


class AccountBackend(ModelBackend):
    def get_user(self, user_id):
        from django.contrib.auth import get_user_model

        User = get_user_model()
        user = User._default_manager.select_related("profile", "worker").filter(pk=user_id).first()
        return user if user is not None and self.user_can_authenticate(user) else None
