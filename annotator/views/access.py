"""Who may see which page: one place for role checks of the HTML views."""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from annotator.auth import user_role
from annotator.errors import ApplicationError


def role_required(*roles: str):
    """Log-in, then the role: anonymous users go to the log-in page, others get a 403."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if user_role(request.user) not in roles:
                raise PermissionDenied("Your account does not have access to this page.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def application_errors_as_400(view):
    """Render an ApplicationError from a service as a readable error page with its status (4xx)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except ApplicationError as error:
            context = {"message": error.message, "extra": error.extra}
            return render(request, "error.html", context, status=error.status)

    return wrapped
