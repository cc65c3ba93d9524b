"""Who may read exports and label sets (annotator.core.selectors.access holds the roles and the rules in words)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.campaigns.selectors.access import campaigns_visible_to
from annotator.core.selectors.access import is_operator, is_reader
from annotator.labels.models.exports import ExportJob
from annotator.labels.models.labelsets import LabelSet


def exports_visible_to(user) -> QuerySet[ExportJob]:
    """Exports of the campaigns `user` may read (a researcher sees the owner's exports too: same labels)."""
    return ExportJob.objects.filter(campaign__in=campaigns_visible_to(user).values("pk")).select_related("campaign")


def label_sets_visible_to(user) -> QuerySet[LabelSet]:
    """Public sets, one's own, those of readable campaigns, those on one's own datasets; all for operators."""
    sets = LabelSet.objects.select_related("dataset", "created_by", "campaign")
    if is_operator(user):
        return sets
    if not is_reader(user):
        return sets.none()
    visible = (
        Q(public=True)
        | Q(created_by=user)
        | Q(campaign__in=campaigns_visible_to(user).values("pk"))
        | Q(dataset__owner=user)
    )
    return sets.filter(pk__in=LabelSet.objects.filter(visible).values("pk"))
