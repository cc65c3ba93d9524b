"""Requester forms on an assignment's review page: a bonus for the worker, a message to them; the bonuses
MTurk did not accept, with Retry.

Requester-only; an assignment of another requester's campaign is a 404 (annotator.campaigns.selectors.access).
Service errors render as 4xx pages with the service's message.
"""

from decimal import Decimal, InvalidOperation

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.campaigns.selectors.crowd_work import bonuses_failed
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.crowd.models.crowd import Assignment
from annotator.crowd.models.money import Bonus
from annotator.crowd.services.bonuses import bonus_give, bonus_retry, worker_message_send


def _assignment(request, assignment_id: int) -> Assignment:
    assignment = Assignment.objects.select_related("hit__campaign", "worker").filter(pk=assignment_id).first()
    if assignment is None or not campaigns_managed_by(request.user).filter(pk=assignment.hit.campaign_id).exists():
        raise Http404("No such assignment.")
    return assignment


def _cents(text: str) -> int:
    """'1.50' or '$1.50' -> 150; anything else is a 400 with a message."""
    try:
        amount = Decimal((text or "").strip().lstrip("$").replace(",", ""))
        whole_cents = amount.is_finite() and amount == amount.quantize(Decimal("0.01"))
    except InvalidOperation:
        whole_cents = False
    if not whole_cents:
        raise ApplicationError("Give the bonus in dollars and cents, such as 1.50.")
    return int(amount * 100)


@require_POST
@role_required(Role.REQUESTER)
def bonus_give_view(request, assignment_id: int):
    assignment = _assignment(request, assignment_id)
    bonus = bonus_give(
        campaign=assignment.hit.campaign,
        assignment=assignment,
        amount_cents=_cents(request.POST.get("amount", "")),
        reason=request.POST.get("reason", ""),
        idempotency_key=request.POST.get("idempotency_key", ""),
        actor=request.user,
    )
    messages.success(request, f"Bonus of ${bonus.amount_cents / 100:,.2f} given to {assignment.worker.pseudonym}.")
    return redirect("review-assignment", assignment_id=assignment.pk)


@require_POST
@role_required(Role.REQUESTER)
def worker_message_view(request, assignment_id: int):
    assignment = _assignment(request, assignment_id)
    worker_message_send(
        campaign=assignment.hit.campaign,
        worker=assignment.worker,
        subject=request.POST.get("subject", ""),
        body=request.POST.get("body", ""),
        actor=request.user,
    )
    messages.success(request, f"Message sent to {assignment.worker.pseudonym}.")
    return redirect("review-assignment", assignment_id=assignment.pk)


FAILED_PAGE_SIZE = 50


@require_GET
@role_required(Role.REQUESTER)
def bonuses_failed_page(request):
    """The bonuses MTurk did not accept on the requester's campaigns (`?campaign=` narrows to one), each with
    MTurk's error and a Retry button."""
    campaigns = campaigns_managed_by(request.user)
    campaign = None
    chosen = request.GET.get("campaign", "")
    if chosen:
        campaign = campaigns.filter(pk=int(chosen)).first() if chosen.isdigit() else None
        if campaign is None:
            raise Http404("No such campaign.")
        campaigns = campaigns.filter(pk=campaign.pk)
    page = Paginator(bonuses_failed(campaigns=campaigns), FAILED_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "bonuses": page.object_list, "campaign": campaign}
    return render(request, "money/bonuses_failed.html", context)


@require_POST
@role_required(Role.REQUESTER)
def bonus_retry_view(request, bonus_id: int):
    """Send a failed bonus to MTurk again (annotator.crowd.services.bonuses.bonus_retry)."""
    bonus = Bonus.objects.select_related("worker").filter(pk=bonus_id).first()
    if bonus is None or not campaigns_managed_by(request.user).filter(pk=bonus.campaign_id).exists():
        raise Http404("No such bonus.")
    bonus = bonus_retry(bonus=bonus)
    amount = f"${bonus.amount_cents / 100:,.2f}"
    messages.success(request, f"The bonus of {amount} to {bonus.worker.pseudonym} is being sent to MTurk again.")
    target = reverse("bonuses-failed")
    if request.POST.get("campaign", "").isdigit():
        target += f"?campaign={request.POST['campaign']}"
    return redirect(target)


urlpatterns = [
    path("money/bonuses/failed/", bonuses_failed_page, name="bonuses-failed"),
    path("money/bonuses/<int:bonus_id>/retry", bonus_retry_view, name="bonus-retry"),
    path("review/assignments/<int:assignment_id>/bonus", bonus_give_view, name="bonus-give"),
    path("review/assignments/<int:assignment_id>/message", worker_message_view, name="worker-message"),
]
