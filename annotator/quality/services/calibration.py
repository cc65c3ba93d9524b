"""The posterior checked on gold, written: the campaign's inflation factor (Campaign.posterior_inflation).

The check itself is a read (annotator.quality.selectors.posterior.campaign_gold_check); this service keeps its
verdict on the campaign so that the labels' intervals and the stopping rule of adaptive redundancy
(annotator.quality.selectors.redundancy.pair_settled) use the same factor until the next aggregation.
"""

from __future__ import annotations

from annotator.analysis.posterior import GoldCheck
from annotator.campaigns.models.campaign import Campaign, Scale
from annotator.quality.selectors.posterior import campaign_gold_check


def campaign_calibration_refresh(*, campaign: Campaign) -> GoldCheck | None:
    """Check the campaign's working posterior on its gold and store the inflation the check asks for.

    No lock: one UPDATE of one column, the last writer's check (on the newer answers) wins. Idempotent: the
    same answers give the same factor. Does nothing (returns None) for a similarity-scale campaign, whose
    labels are not the posterior's. Updates `campaign.posterior_inflation` in memory as well.
    """
    if campaign.scale == Scale.SIMILARITY:
        return None
    check = campaign_gold_check(campaign=campaign)
    if check.inflation != campaign.posterior_inflation:
        Campaign.objects.filter(pk=campaign.pk).update(posterior_inflation=check.inflation)
        campaign.posterior_inflation = check.inflation
    return check
