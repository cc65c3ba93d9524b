"""Who may see and manage datasets (annotator.core.selectors.access holds the roles and the rules in words).

A researcher sees the dataset behind each campaign shared with them. Sharing is a later step's (a campaign's
`shared_with`), so that step registers which datasets it shares (`datasets_shared_register`, called from
annotator/campaigns/selectors/access.py when AnnotatorConfig.ready imports it), as the jobs' kinds register with
annotator.core.jobs: this step knows no later one.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Q, QuerySet

from annotator.core.selectors.access import is_operator, is_requester, is_researcher
from annotator.datasets.models.dataset import Dataset

# user -> the ids of the datasets shared with them (a queryset of ids), one per step that shares.
_SHARED: list[Callable[[object], QuerySet]] = []


def datasets_shared_register(shared: Callable[[object], QuerySet]) -> Callable[[object], QuerySet]:
    """Add a rule that gives a researcher the datasets behind what was shared with them."""
    _SHARED.append(shared)
    return shared


def datasets_managed_by(user) -> QuerySet[Dataset]:
    """Datasets `user` may import into and run machine annotators on: a requester's own and unowned ones."""
    if is_operator(user):
        return Dataset.objects.all()
    if not is_requester(user):
        return Dataset.objects.none()
    return Dataset.objects.filter(Q(owner__isnull=True) | Q(owner=user))


def can_manage_dataset(user, dataset: Dataset) -> bool:
    if is_operator(user):
        return True
    return is_requester(user) and dataset.owner_id in (None, user.pk)


def datasets_visible_to(user) -> QuerySet[Dataset]:
    """Datasets whose pages (images, ranking runs) `user` may open: the managed ones for a requester, the
    datasets of the campaigns shared with them for a researcher."""
    if is_operator(user) or is_requester(user):
        return datasets_managed_by(user)
    if not is_researcher(user):
        return Dataset.objects.none()
    if not _SHARED:
        raise RuntimeError("no step registered the datasets it shares (AnnotatorConfig.ready imports them)")
    shared = Q()
    for rule in _SHARED:
        shared |= Q(pk__in=rule(user))
    return Dataset.objects.filter(shared)
