"""`{% load money %}`: amounts in cents as money ("$1,457.40") and numbers with thousands separators."""

from django import template

register = template.Library()


@register.filter
def money(cents):
    """145740 -> '$1,457.40'; -250 -> '-$2.50'; None or '' -> ''."""
    if cents in (None, ""):
        return ""
    value = round(float(cents)) / 100.0
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


@register.filter
def number(value):
    """12345 -> '12,345'; 1234.5 -> '1,234.5'; None or '' -> ''."""
    if value in (None, ""):
        return ""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,}"
    return f"{int(value):,}"


@register.simple_tag
def new_idempotency_key():
    """A fresh key for a form that must act once however often it is sent (a double click, a resend)."""
    import uuid

    return uuid.uuid4().hex
