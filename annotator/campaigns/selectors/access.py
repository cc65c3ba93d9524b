"""Who may see and manage campaigns (annotator.core.selectors.access holds the roles and the rules in words),
and the datasets a campaign shares with a researcher."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.campaigns.models.campaign import Campaign
from annotator.core.selectors.access import is_operator, is_reader, is_requester
from annotator.datasets.selectors.access import datasets_shared_register


def campaigns_managed_by(user) -> QuerySet[Campaign]:
    """Campaigns `user` builds, launches and reviews: a requester's own (sharing never lets anyone else)."""
    if is_operator(user):
        return Campaign.objects.all()
    if not is_requester(user):
        return Campaign.objects.none()
    return Campaign.objects.filter(owner=user)


def can_manage_campaign(user, campaign: Campaign) -> bool:
    if is_operator(user):
        return True
    return is_requester(user) and campaign.owner_id == user.pk


def campaigns_visible_to(user) -> QuerySet[Campaign]:
    """Campaigns whose labels, metrics and exports `user` may read: their own and those shared with them."""
    if is_operator(user):
        return Campaign.objects.all()
    if not is_reader(user):
        return Campaign.objects.none()
    return Campaign.objects.filter(pk__in=Campaign.objects.filter(Q(owner=user) | Q(shared_with=user)).values("pk"))


@datasets_shared_register
def datasets_shared_with(user) -> QuerySet:
    """The ids of the datasets behind the campaigns `user` may read (annotator.datasets.selectors.access)."""
    return campaigns_visible_to(user).values("dataset_id")
