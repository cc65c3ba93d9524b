"""What the campaign page shows from later steps than the campaign's own: the question its workers are asked
(the crowd step's answer scales) and its submissions late for their score (the operations step's sweep).

`{% load campaign_panels %}`, then `{% campaign_question campaign %}` and `{% late_scores_panel campaign %}`. The
tags sit above every step (like urls.py), so the campaign's page composes them without its view importing a later
step (the pipeline contract in pyproject.toml)."""

from django import template

from annotator.crowd.scales import campaign_scale
from annotator.operations.selectors.operations import late_unscored_by_campaign
from annotator.operations.services.sweep import stale_times

register = template.Library()


@register.simple_tag
def campaign_question(campaign) -> str:
    """The question the campaign's worker page asks (annotator.crowd.scales.campaign_scale)."""
    return campaign_scale(campaign=campaign)["question"]


@register.inclusion_tag("operations/_late_scores.html", takes_context=True)
def late_scores_panel(context, campaign):
    """How many of the campaign's submissions have waited past the sweep's threshold for their score, as the
    person sees them (annotator.operations.selectors.operations.late_unscored_by_campaign)."""
    user = context["request"].user
    return {"late_scores": late_unscored_by_campaign(user=user, stale=stale_times(), campaign=campaign)}
