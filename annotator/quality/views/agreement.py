"""Requester pages: a campaign's agreement (Krippendorff's alpha overall and per annotator and rank) and
per-worker statistics, as a page and a CSV. Requester-only; own or shared campaigns, anything else a 404."""

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.quality.selectors.agreement import (
    campaign_agreement,
    campaign_worker_statistics,
    worker_statistics_csv,
)


def _campaign(request, campaign_id: int):
    campaign = campaigns_managed_by(request.user).filter(pk=campaign_id).first()
    if campaign is None:
        raise Http404("No such campaign.")
    return campaign


@require_GET
@role_required(Role.REQUESTER)
def agreement_page(request, campaign_id: int):
    campaign = _campaign(request, campaign_id)
    return render(
        request,
        "review/agreement.html",
        {
            "campaign": campaign,
            "agreement": campaign_agreement(campaign=campaign),
            "workers": campaign_worker_statistics(campaign=campaign),
        },
    )


@require_GET
@role_required(Role.REQUESTER)
def workers_csv(request, campaign_id: int):
    campaign = _campaign(request, campaign_id)
    response = HttpResponse(worker_statistics_csv(campaign=campaign), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-workers.csv"'
    return response


urlpatterns = [
    path("review/campaigns/<int:campaign_id>/agreement/", agreement_page, name="review-agreement"),
    path("review/campaigns/<int:campaign_id>/workers.csv", workers_csv, name="review-workers-csv"),
]
