"""`{% load ranking %}{% ranking_panel dataset %}`: the machine-annotator panel of the dataset page."""

from django import template

register = template.Library()


@register.inclusion_tag("ranking/panel.html", takes_context=True)
def ranking_panel(context, dataset):
    from annotator.ranking.views.ranking import ranking_panel_context

    return ranking_panel_context(request=context["request"], dataset=dataset)


@register.filter
def seconds_as_eta(seconds):
    """120.5 -> '2 min'; None -> ''."""
    if seconds is None:
        return ""
    seconds = int(seconds)
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


@register.filter
def cell(matrix, index):
    """matrix|cell:i -> row i (templates cannot index by a variable)."""
    try:
        return matrix[int(index)]
    except (IndexError, TypeError, ValueError):
        return None
