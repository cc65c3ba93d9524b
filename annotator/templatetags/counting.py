"""Counts a person reads: a number with its unit in the right number ("1 HIT", "3 HITs", "1 time"), and a
HIT's number counted from 1 (Hit.index counts from 0, as the packing does)."""

from django import template

register = template.Library()


@register.filter
def units(count, unit: str) -> str:
    """`{{ n|units:"HIT" }}` -> "1 HIT" / "2 HITs"; an irregular plural after a comma: `"query,queries"`."""
    singular, _, plural = unit.partition(",")
    plural = plural or f"{singular}s"
    try:
        one = int(count) == 1
    except (TypeError, ValueError):
        one = False
    return f"{count} {singular if one else plural}"


@register.filter
def hit_number(index) -> int | str:
    """The number a person sees for a HIT: its index + 1."""
    try:
        return int(index) + 1
    except (TypeError, ValueError):
        return ""
