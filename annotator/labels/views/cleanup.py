"""Post-processing a campaign (ECCV App. C): the captions that are not descriptions and the original pairs the crowd
rejects, proposed for removal and decided by the requester. Requester-only, on their own campaigns."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.labels.models.cleanup import CleanupProposal
from annotator.labels.services.cleanup import cleanup_decide, cleanup_detect


def _campaign(request, campaign_id: int):
    campaign = campaigns_managed_by(request.user).filter(pk=campaign_id).first()
    if campaign is None:
        raise Http404("No such campaign.")
    return campaign


@require_GET
@role_required(Role.REQUESTER)
def cleanup_page(request, campaign_id: int):
    campaign = _campaign(request, campaign_id)
    proposals = CleanupProposal.objects.filter(campaign=campaign).select_related("caption", "pair__image", "decided_by")
    return render(request, "review/cleanup.html", {"campaign": campaign, "proposals": proposals})


@require_POST
@role_required(Role.REQUESTER)
def cleanup_run(request, campaign_id: int):
    campaign = _campaign(request, campaign_id)
    found = cleanup_detect(campaign=campaign)
    messages.success(
        request,
        f"{found['not_description']} caption(s) that may not be descriptions, "
        f"{found['original_rejected']} original pair(s) the crowd rejects.",
    )
    return redirect("review-cleanup", campaign_id=campaign.pk)


@require_POST
@role_required(Role.REQUESTER)
def cleanup_decide_view(request, campaign_id: int, proposal_id: int):
    campaign = _campaign(request, campaign_id)
    proposal = CleanupProposal.objects.filter(pk=proposal_id, campaign=campaign).first()
    if proposal is None:
        raise Http404("No such proposal.")
    decision = request.POST.get("decision")
    if decision not in ("confirm", "keep"):
        raise ApplicationError("Choose remove or keep.")
    cleanup_decide(proposal=proposal, actor=request.user, confirm=decision == "confirm")
    return redirect(reverse("review-cleanup", kwargs={"campaign_id": campaign.pk}) + f"#proposal-{proposal.pk}")


urlpatterns = [
    path("review/campaigns/<int:campaign_id>/cleanup/", cleanup_page, name="review-cleanup"),
    path("review/campaigns/<int:campaign_id>/cleanup/detect", cleanup_run, name="review-cleanup-detect"),
    path(
        "review/campaigns/<int:campaign_id>/cleanup/<int:proposal_id>",
        cleanup_decide_view,
        name="review-cleanup-decide",
    ),
]
