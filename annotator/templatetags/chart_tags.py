"""Chart partials: each puts its series on the page with json_script beside a table that says the same,
and static/js/charts.js draws every element marked data-chart."""

from django import template

from annotator.quality.selectors import charts

register = template.Library()


@register.inclusion_tag("charts/_campaign.html")
def campaign_charts(campaign):
    """Throughput over time and seconds per item, on the requester's campaign page."""
    throughput = charts.throughput(campaign=campaign)
    seconds = charts.seconds_per_item(campaign=campaign)
    keys = ("labels", "submitted", "approved", "total_submitted", "total_approved")
    return {
        "throughput": throughput,
        "throughput_rows": list(zip(*(throughput[key] for key in keys), strict=True)),
        "seconds": seconds,
        "seconds_rows": list(zip(seconds["labels"], seconds["counts"], strict=True)),
    }


@register.inclusion_tag("charts/_spend.html")
def spend_chart(campaign):
    """Spend so far over time against the budget, on the campaign page's money section."""
    spend = charts.spend_over_time(campaign=campaign)
    return {"spend": spend, "spend_rows": list(zip(spend["labels"], spend["spent"], strict=True))}


@register.inclusion_tag("charts/_workers.html")
def worker_chart(per_worker):
    """Approval rate and gold accuracy per worker with their intervals (rows of campaign_quality)."""
    return {"workers": charts.worker_intervals(per_worker=per_worker)}


@register.inclusion_tag("charts/_model_rates.html")
def model_rate_chart(model, number):
    """One annotator's answers by rank (Table B.2), stacked."""
    chart = charts.model_rate_charts(model_rates=[model])[0]
    chart["id"] = f"chart-b2-{number}"
    return {"chart": chart}


@register.inclusion_tag("charts/_error_types.html")
def error_types_chart(campaign):
    """Table B.3 with one row per annotator, as tables and as grouped bars."""
    errors = charts.error_types_by_annotator(campaign=campaign)
    parts = [
        ("Shortcomings", "chart-b3-shortcomings", errors["shortcomings"]),
        ("Described wrongly", "chart-b3-aspects", errors["aspects"]),
    ]
    return {"errors": errors, "parts": parts}
