"""Who may see and manage ranking runs (annotator.core.selectors.access holds the roles and the rules in words)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.core.selectors.access import is_operator, is_reader
from annotator.datasets.selectors.access import can_manage_dataset, datasets_visible_to
from annotator.ranking.models.ranking import RankingRun


def runs_visible_to(user) -> QuerySet[RankingRun]:
    """Ranking runs on the datasets `user` may see, and the runs they started or uploaded themselves."""
    if is_operator(user):
        return RankingRun.objects.all()
    if not is_reader(user):
        return RankingRun.objects.none()
    return RankingRun.objects.filter(Q(dataset__in=datasets_visible_to(user).values("pk")) | Q(created_by=user))


def can_manage_run(user, run: RankingRun) -> bool:
    """Cancelling, retrying: the requester of the run's dataset."""
    return can_manage_dataset(user, run.dataset)
