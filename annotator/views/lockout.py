"""What a locked-out log-in gets (django-axes' AXES_LOCKOUT_CALLABLE): 429, Retry-After, a plain page."""

import math

from axes.helpers import get_cool_off
from django.shortcuts import render


def lockout_response(request, response, credentials):
    """The same answer for a locked user name and a locked address: it names neither."""
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) if cool_off else 1800
    minutes = math.ceil(seconds / 60)
    page = render(
        request,
        "error.html",
        {"message": f"Too many failed log-ins. Try again in {minutes} minutes."},
        status=429,
    )
    page["Retry-After"] = str(seconds)
    return page
