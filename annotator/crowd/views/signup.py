"""Local sign-up (optionally with an invite code): it makes a crowd-worker account, logs it in and goes to the
worker's page. Log-in and log-out are core's (annotator/core/views/accounts.py)."""

import math
import time

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.core.cache import cache
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.debug import sensitive_post_parameters

from annotator.core.addresses import client_address
from annotator.core.errors import ApplicationError
from annotator.crowd.services.workers import worker_signup


class SignupForm(forms.Form):
    username = forms.CharField(
        label="User name", max_length=150, widget=forms.TextInput(attrs={"autocomplete": "username", "autofocus": True})
    )
    email = forms.EmailField(
        label="Email (optional)", required=False, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters, not only digits, not a common password, not like your user name or email.",
    )
    password_again = forms.CharField(
        label="Password again", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    invite_code = forms.CharField(label="Invite code", required=False, max_length=200)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("password") and cleaned.get("password") != cleaned.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return cleaned


def _signup_rate_wait(request) -> int:
    """Seconds until this address may try another sign-up (0: now). A valid sign-up must say whether a user
    name is free, so it is the tries that are limited: SIGNUP_RATE_PER_HOUR per client address
    (annotator.core.addresses), counted in the cache."""
    limit = settings.SIGNUP_RATE_PER_HOUR
    if limit <= 0:
        return 0
    window = int(time.time() // 3600)
    key = f"signup-tries:{client_address(request)}:{window}"
    cache.add(key, 0, timeout=3600)
    tries = cache.incr(key)
    return 0 if tries <= limit else 3600 - int(time.time() % 3600)


def _invite_required() -> bool:
    return bool(getattr(settings, "SIGNUP_INVITE_CODE", ""))


@sensitive_post_parameters("password", "password_again")
def signup(request):
    """Create a crowd-worker account, log it in and go to the worker's page."""
    if request.user.is_authenticated:
        return redirect("work_home")
    form = SignupForm(request.POST or None, initial={"invite_code": request.GET.get("invite", "")})
    if not _invite_required():
        del form.fields["invite_code"]
    status = 200
    if request.method == "POST":
        wait = _signup_rate_wait(request)
        if wait:
            response = render(
                request,
                "error.html",
                {"message": f"Too many sign-ups from your address. Try again in {math.ceil(wait / 60)} minutes."},
                status=429,
            )
            response["Retry-After"] = str(wait)
            return response
        if form.is_valid():
            try:
                worker = worker_signup(
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password"],
                    email=form.cleaned_data.get("email", ""),
                    invite_code=form.cleaned_data.get("invite_code", ""),
                )
            except ApplicationError as error:
                field = error.extra.get("field")
                form.add_error(field if field in form.fields else None, error.message)
            else:
                login(request, worker.user, backend="annotator.crowd.auth.AccountBackend")
                messages.success(request, "Welcome! Pick a campaign below to start working.")
                return redirect("work_home")
        status = 400
    return render(request, "registration/signup.html", {"form": form}, status=status)


urlpatterns = [
    path("accounts/signup/", signup, name="signup"),
]
