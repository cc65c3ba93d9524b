"""The log-in backend (Django's ModelBackend) that reads the user with their
role and worker in one query.

Every request of a logged-in person loads the user from the session; crowd workers send one request per
autosaved item, and each needs the role (Profile) and the Worker too. Joining both here saves a query on
every request. Passwords, permissions and `is_active` are checked exactly as ModelBackend does.
"""

from django.contrib.auth.backends import ModelBackend


class AccountBackend(ModelBackend):
    def get_user(self, user_id):
        from django.contrib.auth import get_user_model

        User = get_user_model()
        user = User._default_manager.select_related("profile", "worker").filter(pk=user_id).first()
        return user if user is not None and self.user_can_authenticate(user) else None
