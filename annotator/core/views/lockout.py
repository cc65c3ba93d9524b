"""What a refused log-in gets (django-axes' AXES_LOCKOUT_CALLABLE): 429, Retry-After, a plain page.

Two refusals come here: a (user name, address) pair that axes locked, and a try inside the growing delay
of annotator.core.services.login_guard, which leaves its wait on the request."""

import math

from axes.helpers import get_cool_off
from django.shortcuts import render


def lockout_response(request, response, credentials):
    """The same answer for either refusal: it says how long to wait, not which counter refused."""
    seconds = getattr(request, "login_retry_after", None)
    if seconds is None:
        cool_off = get_cool_off(request)
        seconds = int(cool_off.total_seconds()) if cool_off else 1800
    minutes = math.ceil(seconds / 60)
    wait = f"{minutes} minutes" if minutes > 1 else "a minute"
    page = render(request, "error.html", {"message": f"Too many failed log-ins. Try again in {wait}."}, status=429)
    page["Retry-After"] = str(seconds)
    return page
