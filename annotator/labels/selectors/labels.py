"""Reads for researchers: which campaigns a person may read, their labels, counts, exports, evaluations."""

from __future__ import annotations

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from annotator.campaigns.models.campaign import Campaign, Scale
from annotator.campaigns.selectors.access import campaigns_visible_to
from annotator.core.errors import ApplicationError
from annotator.labels.models.cleanup import CleanupProposal, CleanupStatus
from annotator.labels.models.labels import AggregationMethod, Label

# The method exported when none is asked for and the campaign has no labels of its own label model: the
# first one it has labels for. The posterior first: plain Dawid-Skene, with two or three HITs per worker,
# overturns two-to-one majorities (docs/quality.md).
METHOD_PREFERENCE = (
    AggregationMethod.POSTERIOR,
    AggregationMethod.DAWID_SKENE,
    AggregationMethod.GOLD_WEIGHTED,
    AggregationMethod.MAJORITY,
    AggregationMethod.MEAN,
)


def campaign_get_readable(*, user, campaign_id) -> Campaign:
    """The campaign if `user` may read its labels; 404 (as an ApplicationError) otherwise."""
    try:
        campaign_id = int(campaign_id)
    except (TypeError, ValueError):
        raise ApplicationError("A campaign id is a whole number.") from None
    campaign = campaigns_visible_to(user).filter(pk=campaign_id).first()
    if campaign is None:
        raise ApplicationError(f"No campaign {campaign_id} is shared with you.", status=404)
    return campaign


def label_list(
    *,
    campaigns: QuerySet[Campaign],
    campaign_id: int | None = None,
    method: str | None = None,
    positive: bool | None = None,
    strict: bool = False,
) -> QuerySet[Label]:
    """Labels of `campaigns`, filtered; ordered by pair for stable pagination.

    As in the exports, pairs with a caption whose removal the requester confirmed (post-processing) are
    left out.
    """
    removed = CleanupProposal.objects.filter(campaign=OuterRef("pair__campaign"), status=CleanupStatus.CONFIRMED)
    labels = (
        Label.objects.filter(pair__campaign__in=campaigns)
        .exclude(Exists(removed.filter(caption=OuterRef("pair__caption"))))
        .exclude(Exists(removed.filter(caption=OuterRef("pair__other_caption"))))
        .select_related("pair", "pair__image", "pair__caption", "pair__other_image", "pair__other_caption")
    )
    if campaign_id is not None:
        labels = labels.filter(pair__campaign_id=campaign_id)
    if method:
        labels = labels.filter(method=method)
    if positive is not None:
        labels = labels.filter(**{"is_positive_strict" if strict else "is_positive": positive})
    return labels.order_by("pair_id", "method")


def label_counts(*, campaign: Campaign) -> list[dict]:
    """Per method: labels, lenient positives, strict positives."""
    rows = (
        Label.objects.filter(pair__campaign=campaign)
        .values("method")
        .annotate(
            labels=Count("id"),
            positives=Count("id", filter=Q(is_positive=True)),
            strict_positives=Count("id", filter=Q(is_positive_strict=True)),
        )
        .order_by("method")
    )
    return list(rows)


def label_method_default(*, campaign: Campaign) -> str | None:
    """The aggregation method to use when none is given: the campaign's label model (the mean on the 0-5
    scale) when it has labels of it, else the first of METHOD_PREFERENCE it has labels for."""
    present = set(Label.objects.filter(pair__campaign=campaign).values_list("method", flat=True).distinct())
    own = AggregationMethod.MEAN if campaign.scale == Scale.SIMILARITY else campaign.label_model
    for method in (own, *METHOD_PREFERENCE):
        if method in present:
            return method
    return None


def label_method_resolve(*, campaign: Campaign, method: str | None) -> str:
    """`method` if given and valid, else the default; an ApplicationError when the campaign has no labels."""
    if method:
        if method not in AggregationMethod.values:
            raise ApplicationError(
                f"Unknown aggregation method {method!r}.", extra={"allowed": list(AggregationMethod.values)}
            )
        return method
    default = label_method_default(campaign=campaign)
    if default is None:
        raise ApplicationError(f"Campaign {campaign.pk} has no labels yet; aggregate its answers first.", status=409)
    return default
