"""{% quality_panel campaign %}: the quality-control panel on the campaign page (counts and links)."""

from django import template

from annotator.selectors.quality import review_counts

register = template.Library()


@register.inclusion_tag("review/_panel.html")
def quality_panel(campaign):
    counts = review_counts(campaign=campaign)
    decided = counts["approved"] + counts["rejected"]
    rate = 100.0 * counts["approved"] / decided if decided else None
    return {"campaign": campaign, "counts": counts, "approval_rate": rate}
