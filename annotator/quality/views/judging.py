"""The vision-language judge on a campaign's Quality page: judge the campaign's pairs. The panel that reads it is
`{% judge_panel campaign %}` (annotator/templatetags/quality_tags.py)."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.quality.services.judging import judge_campaign_start
from annotator.ranking.models.ranking import MachineAnnotator


@require_POST
@role_required(Role.REQUESTER)
def campaign_judge(request, campaign_id: int):
    campaign = campaigns_managed_by(request.user).filter(pk=campaign_id).first()
    if campaign is None:
        raise Http404("No such campaign.")
    try:
        annotator = MachineAnnotator.objects.get(pk=int(request.POST.get("annotator", "")))
    except (ValueError, MachineAnnotator.DoesNotExist):
        raise ApplicationError("Choose a vision-language judge from the list.") from None
    run = judge_campaign_start(campaign=campaign, annotator=annotator, created_by=request.user)
    messages.success(
        request, f"Judging the pairs of {campaign.name} with {annotator.name}: run {run.pk} is {run.status}."
    )
    return redirect("review-quality", campaign_id=campaign.pk)
