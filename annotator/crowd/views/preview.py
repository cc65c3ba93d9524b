"""A requester previews one HIT of their campaign as a worker sees it: the worker's page, read-only."""

from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from annotator.campaigns.selectors.campaigns import campaign_get_managed
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.crowd.selectors import work as work_selectors
from annotator.crowd.views.hit_page import hit_context

PREVIEW_NOTICE = "Preview: this is the HIT as a worker sees it. Nothing you do here is saved or counted."


@require_GET
@role_required(Role.REQUESTER)
def campaign_preview(request, campaign_id: int):
    """One HIT (`?hit=` id, else the first) rendered as the worker's page, read-only: no assignment is made,
    no answer saved, and the items carry what a worker's browser gets (no roles, so no gold marks)."""
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    hits = campaign.hits.order_by("pk")
    hit_id = request.GET.get("hit", "")
    hit = hits.filter(pk=int(hit_id)).first() if hit_id.isdigit() else hits.first()
    if hit is None:
        raise ApplicationError("This campaign has no such HIT; build it first.", status=404)
    items = work_selectors.hit_items_for_worker(hit=hit)
    context = hit_context(campaign=campaign, items=items, answers={}, mode="preview", stage=hit.stage)
    context["preview_notice"] = PREVIEW_NOTICE
    return render(request, "work/hit.html", context)


urlpatterns = [
    path("campaigns/<int:campaign_id>/preview/", campaign_preview, name="campaign-preview"),
]
