"""A campaign's life outside its build: create, launch, pause, resume, finish (CAMPAIGN_TRANSITIONS)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotator.campaigns.models.campaign import CAMPAIGN_TRANSITIONS, Campaign, CampaignStatus, Hit
from annotator.campaigns.selectors.crowd_work import campaign_spend
from annotator.campaigns.services.options import (
    OPTION_FIELDS,
    check_options,
    check_runs,
    validation_error,
)
from annotator.core.errors import ApplicationError
from annotator.core.models.state import check_transition
from annotator.core.services.webhooks.delivery import webhook_emit
from annotator.datasets.models.dataset import Dataset
from annotator.ranking.models.ranking import RankingRun


def campaign_lock(campaign: Campaign) -> Campaign:
    return Campaign.objects.select_for_update().get(pk=campaign.pk)


def campaign_create(*, owner, dataset: Dataset, runs: list[RankingRun], **options) -> Campaign:
    """Create a draft campaign over `runs` (succeeded runs of `dataset`) with `options` (Campaign fields).

    Validates with full_clean plus the cross-option rules; raises ApplicationError (400) with every
    problem listed. Not idempotent: each call creates a campaign. No locks.
    """
    unknown = sorted(set(options) - set(OPTION_FIELDS))
    if unknown:
        raise ApplicationError(f"Unknown campaign options: {', '.join(unknown)}.")
    runs = list(runs)
    check_runs(dataset=dataset, runs=runs)
    campaign = Campaign(owner=owner, dataset=dataset, **options)
    try:
        campaign.full_clean()
    except ValidationError as error:
        raise validation_error(error) from error
    check_options(campaign=campaign, runs=runs)
    with transaction.atomic():
        campaign.save()
        campaign.runs.set(runs)
    return campaign


def _move(*, campaign: Campaign, target: str, sources: tuple[str, ...] | None = None, **fields) -> Campaign:
    """Move the campaign to `target` under a row lock; a campaign already there is returned unchanged.

    `sources` narrows the transition table (launch only from built, resume only from paused); fields that
    are still None are set (launched_at keeps the first launch).
    """
    with transaction.atomic():
        campaign = campaign_lock(campaign)
        if campaign.status == target:
            return campaign
        check_transition(transitions=CAMPAIGN_TRANSITIONS, current=campaign.status, target=target, what="campaign")
        if sources is not None and campaign.status not in sources:
            raise ApplicationError(f"A campaign that is {campaign.status} cannot become {target} this way.", status=409)
        if target == CampaignStatus.LIVE and not Hit.objects.filter(campaign=campaign).exists():
            raise ApplicationError("This campaign has no HITs; build it first.", status=409)
        campaign.status = target
        for name, value in fields.items():
            if getattr(campaign, name) is None:
                setattr(campaign, name, value)
        campaign.save(update_fields=["status", *fields])
    return campaign


def campaign_launch(*, campaign: Campaign) -> Campaign:
    """built -> live: workers can claim its HITs. Locks the campaign row (SELECT ... FOR UPDATE);
    launching a live campaign is a no-op; any other state is refused with 409."""
    return _move(
        campaign=campaign, target=CampaignStatus.LIVE, sources=(CampaignStatus.BUILT,), launched_at=timezone.now()
    )


def campaign_pause(*, campaign: Campaign) -> Campaign:
    """live -> paused: no new claims (leases already held may still be submitted). Locks the campaign row;
    idempotent for a paused campaign; other states 409."""
    return _move(campaign=campaign, target=CampaignStatus.PAUSED)


def campaign_resume(*, campaign: Campaign) -> Campaign:
    """paused -> live. Locks the campaign row; a live campaign is returned unchanged; a built (never
    launched: use launch) or finished campaign is refused with 409, and so is one whose budget is spent
    (raise the budget first)."""
    current = Campaign.objects.get(pk=campaign.pk)  # the budget as it is now, not as the caller read it
    if current.status == CampaignStatus.PAUSED and campaign_spend(campaign=current)["budget_reached"]:
        raise ApplicationError("This campaign has reached its budget; raise the budget to resume it.", status=409)
    return _move(campaign=campaign, target=CampaignStatus.LIVE, sources=(CampaignStatus.PAUSED,))


def campaign_finish(*, campaign: Campaign) -> Campaign:
    """live or paused -> finished: no more work is handed out; the HITs and answers stay for review and
    export. Locks the campaign row; idempotent for a finished campaign; draft or built 409. Emits the
    campaign.finished webhook once, when it changes."""
    with transaction.atomic():
        before = Campaign.objects.values_list("status", flat=True).get(pk=campaign.pk)
        campaign = _move(campaign=campaign, target=CampaignStatus.FINISHED)
        if before != CampaignStatus.FINISHED:
            webhook_emit(
                owner=campaign.owner, event="campaign.finished", data={"campaign": campaign.pk, "name": campaign.name}
            )
    return campaign
