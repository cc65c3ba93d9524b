"""Coming in: log-in and log-out (POST). Sign-up makes a crowd worker, so it is the crowd step's
(annotator/crowd/views/signup.py)."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.urls import path, reverse

from annotator.core.selectors.access import is_worker
from annotator.core.selectors.logins import login_failures_since_last_login


class LoginView(auth_views.LoginView):
    """Log-in; crowd workers land on their work page, others where they were going (or home)."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def get_success_url(self):
        target = self.get_redirect_url()
        if target:
            return target
        if is_worker(self.request.user):
            return reverse("work_home")
        return super().get_success_url()

    def form_valid(self, form):
        """Log in, and tell the owner about failed log-ins for their name since their last one (no e-mail)."""
        failures = login_failures_since_last_login(user=form.get_user())
        response = super().form_valid(form)
        if failures:
            attempts = "attempt" if failures == 1 else "attempts"
            messages.warning(
                self.request,
                f"{failures} failed log-in {attempts} on your account since your last log-in. "
                "If that was not you, someone tried to guess your password; a long password you use nowhere "
                "else keeps them out.",
            )
        return response

    def form_invalid(self, form):
        response = super().form_invalid(form)
        response.status_code = 400
        return response


urlpatterns = [
    path("accounts/login/", LoginView.as_view(), name="login"),
    # Django's LogoutView accepts POST only (a GET cannot log anyone out behind their back).
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
