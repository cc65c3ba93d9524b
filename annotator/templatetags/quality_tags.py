"""{% quality_panel campaign %}: the quality-control panel on the campaign page (counts and links).
{% judge_panel campaign %}: the vision-language judge on the Quality page, with its agreement with the crowd's
labels (a later step than the page's: annotator.labels.selectors.judge_agreement)."""

from django import template

from annotator.labels.selectors.judge_agreement import judge_report
from annotator.quality.selectors.judging import judges_available
from annotator.quality.selectors.quality import review_counts

register = template.Library()


@register.inclusion_tag("review/_panel.html")
def quality_panel(campaign):
    counts = review_counts(campaign=campaign)
    decided = counts["approved"] + counts["rejected"]
    rate = 100.0 * counts["approved"] / decided if decided else None
    return {"campaign": campaign, "counts": counts, "approval_rate": rate}


@register.inclusion_tag("review/_judge.html", takes_context=True)
def judge_panel(context, campaign):
    """The report of the latest judge run and the judges one may start (the form posts with the page's CSRF token)."""
    return {
        "campaign": campaign,
        "judge": judge_report(campaign=campaign),
        "judges": judges_available(),
        "csrf_token": context.get("csrf_token"),
    }
