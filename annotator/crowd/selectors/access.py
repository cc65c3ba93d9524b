"""Which workers a requester knows (annotator.core.selectors.access holds the roles and the rules in words)."""

from __future__ import annotations

from django.db.models import QuerySet

from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.core.selectors.access import is_operator
from annotator.crowd.models.crowd import Worker


def workers_known_to(user) -> QuerySet[Worker]:
    """Workers who did work on the campaigns `user` manages (operators: every worker)."""
    if is_operator(user):
        return Worker.objects.all()
    worked = Worker.objects.filter(assignments__hit__campaign__in=campaigns_managed_by(user).values("pk"))
    return Worker.objects.filter(pk__in=worked.values("pk"))
