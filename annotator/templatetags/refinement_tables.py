"""Filters of the old-versus-new benchmark tables."""

from django import template

register = template.Library()


@register.filter
def score(mapping, key):
    """mapping[key], or None when either is missing."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(key)


@register.filter
def percent(value, mode=""):
    """A 0-1 score as a percentage with one decimal; signed for a change; a dash when there is none."""
    if value is None:
        return "-"
    text = f"{100 * value:+.1f}" if mode == "signed" else f"{100 * value:.1f}"
    return text
