"""Times in the viewer's own time zone: the server writes UTC into a <time datetime> element, and
static/js/vericap.js rewrites its text in the browser's zone (no inline script under the CSP). Without
JavaScript the UTC text stays, labelled as UTC."""

import datetime

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html

register = template.Library()


@register.filter
def local_time(value, style: str = "datetime"):
    """`{{ when|local_time }}` (date and time) or `{{ when|local_time:"time" }}` (hours and minutes)."""
    if not value:
        return "-"
    utc = timezone.localtime(value, datetime.UTC) if timezone.is_aware(value) else value
    text = date_format(utc, "H:i" if style == "time" else "Y-m-d H:i")
    return format_html('<time datetime="{}" data-style="{}">{} UTC</time>', utc.isoformat(), style, text)
