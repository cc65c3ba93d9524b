"""The research home's counts: per campaign, its labelled pairs and their positives under one aggregation
method (the one its labels are read with by default), not the sum over every method's labels."""

from __future__ import annotations

from django.db.models import Count, Q

from annotator.campaigns.models.campaign import Campaign
from annotator.labels.models.labels import Label
from annotator.labels.selectors.labels import label_method_default


def campaign_label_summary(*, campaign: Campaign) -> dict:
    """{"method": the default method or None, "pairs": labelled pairs, "positives": positive pairs}."""
    method = label_method_default(campaign=campaign)
    if method is None:
        return {"method": None, "pairs": 0, "positives": 0}
    counts = Label.objects.filter(pair__campaign=campaign, method=method).aggregate(
        pairs=Count("pair_id", distinct=True), positives=Count("pair_id", filter=Q(is_positive=True), distinct=True)
    )
    return {"method": method, **counts}
