"""Who may read evaluations (annotator.core.selectors.access holds the roles and the rules in words)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.campaigns.selectors.access import campaigns_visible_to
from annotator.labels.selectors.access import label_sets_visible_to
from annotator.research.models.research import Evaluation


def evaluations_visible_to(user) -> QuerySet[Evaluation]:
    """Evaluations against labels `user` may read: a readable campaign's, or a readable label set's."""
    return Evaluation.objects.filter(
        Q(campaign__in=campaigns_visible_to(user).values("pk"))
        | Q(label_set__in=label_sets_visible_to(user).values("pk"))
    ).select_related("campaign")
