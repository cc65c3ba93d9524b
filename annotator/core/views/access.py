"""The role gate of the HTML views; who may see which object is annotator.core.selectors.access's to say."""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from annotator.core.selectors.access import has_role


def role_required(*roles: str):
    """Log-in, then the role: anonymous users go to the log-in page, others get a 403."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, *roles):
                raise PermissionDenied("Your account does not have access to this page.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator
