"""A campaign's quality policy, changed after creation: tolerance, decisions, labels, adaptive redundancy,
adaptive gold and the budget. It writes only the campaign's own row, so it is the campaigns step's; the Quality
page, the campaign page's budget form and PATCH /api/v1/campaigns/{id}/policy/ call it."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotator.campaigns.models.campaign import Campaign
from annotator.core.errors import ApplicationError

POLICY_FIELDS = (
    "tolerated_gold_misses",
    "budget_cents",
    "gold_fail_action",
    "strict_gold",
    "auto_approve_hours",
    "min_seconds_per_item",
    "confidence_threshold",
    "extra_assignment_cap",
    "label_model",
    "machine_prior",
    "adaptive_redundancy",
    "settle_probability",
    "settle_min_answers",
    "max_answers_per_pair",
    # Adaptive gold: the share of gold-light HITs in what is packed from now on (follow-up rounds, runs
    # added, a rebuild before launch); the claim's preference by the worker's record applies at once.
    "gold_light_share",
)


def campaign_policy_update(*, campaign: Campaign, actor=None, **changes) -> Campaign:
    """Set any of POLICY_FIELDS on the campaign; they apply to what happens from now on (scoring,
    approval, the next aggregation). Validates with full_clean and the rules between fields; raises
    ApplicationError (400) listing every problem. Locks the Campaign row; idempotent."""
    unknown = sorted(set(changes) - set(POLICY_FIELDS))
    if unknown:
        raise ApplicationError(f"Unknown policy settings: {', '.join(unknown)}.")
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        for name, value in changes.items():
            setattr(locked, name, value)
        errors = []
        try:
            locked.full_clean(exclude=["owner", "dataset"])
        except ValidationError as error:
            errors = [f"{field}: {m}" for field, messages in error.message_dict.items() for m in messages]
        gold = locked.gold_positives_per_hit + locked.gold_negatives_per_hit
        if locked.tolerated_gold_misses > gold:
            errors.append("Tolerate at most as many gold misses as a HIT has gold items.")
        if locked.settle_min_answers > locked.max_answers_per_pair:
            errors.append("settle_min_answers cannot be more than max_answers_per_pair.")
        if errors:
            raise ApplicationError("The policy is not valid: " + "; ".join(errors), extra={"errors": errors})
        if changes:
            locked.save(update_fields=list(changes))
        return locked
