"""Who sees which audit events: staff see all; a requester sees what they did, what touches their own record
(their standing with a worker, their tokens) and what happened on campaigns they may review; anyone else,
the events about their own account. One requester never sees another's blocks or their reasons."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.core.models.audit import AuditEvent
from annotator.core.selectors.access import is_operator, is_requester


def audit_events_visible(*, user) -> QuerySet:
    events = AuditEvent.objects.select_related("actor", "subject_user", "worker", "campaign")
    if is_operator(user):
        return events
    if is_requester(user):
        return events.filter(
            Q(actor=user) | Q(subject_user=user) | Q(campaign__in=campaigns_managed_by(user).values("pk"))
        )
    return events.filter(subject_user=user)
