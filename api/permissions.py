"""Role checks of the API: each viewset says which roles may call which action; annotator.core.selectors.access
decides."""

from rest_framework.permissions import BasePermission

from annotator.core.selectors.access import has_role, user_role
from annotator.models import Role

REQUESTER = frozenset({Role.REQUESTER})
READERS = frozenset({Role.REQUESTER, Role.RESEARCHER})
EVERYONE = frozenset({Role.REQUESTER, Role.RESEARCHER, Role.WORKER})


class RolePermission(BasePermission):
    """Allow the action when the caller's role is in `view.action_roles[action]` (else `view.roles`).

    Objects outside the caller's scope never reach a permission check: each viewset's get_queryset()
    returns only what the caller may see, so those are a 404, not a 403.
    """

    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        role = user_role(request.user)
        if role is None:
            return False
        allowed = getattr(view, "action_roles", {}).get(getattr(view, "action", None), getattr(view, "roles", ()))
        if not has_role(request.user, *allowed):
            self.message = f"A {role} may not do this; it needs one of: {', '.join(sorted(allowed)) or 'nobody'}."
            return False
        return True
