"""Reads of the decisions sent to MTurk: the ones a requester must look at, the ones the sweep sends again."""

from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from annotator.campaigns.models.campaign import Campaign
from annotator.quality.models.decisions import ExternalDecision, ExternalDecisionStatus


def external_decisions_failed(*, campaign: Campaign) -> QuerySet:
    """The campaign's decisions MTurk did not accept, latest first (the review page's list with Retry)."""
    return (
        ExternalDecision.objects.filter(assignment__hit__campaign=campaign, status=ExternalDecisionStatus.FAILED)
        .select_related("assignment__worker", "assignment__hit")
        .order_by("-updated_at", "-pk")
    )


def external_decisions_unsent_count(*, campaign: Campaign) -> int:
    """How many of the campaign's decisions are still on their way to MTurk."""
    return ExternalDecision.objects.filter(
        assignment__hit__campaign=campaign, status=ExternalDecisionStatus.PENDING
    ).count()


def external_decisions_lost(*, stale: timedelta, now=None) -> QuerySet:
    """Pending decisions untouched for `stale`: their message, or the task's retry, was lost."""
    now = now or timezone.now()
    return ExternalDecision.objects.filter(status=ExternalDecisionStatus.PENDING, updated_at__lt=now - stale)
