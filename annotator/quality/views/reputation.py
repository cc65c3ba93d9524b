"""The requester's choice to share gold records in the anonymised worker reputation (/account/reputation/)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotator.core.models.accounts import Profile, Role
from annotator.core.views.access import role_required
from annotator.quality.services.reputation import profile_share_gold_record_set


@require_GET
@role_required(Role.REQUESTER)
def reputation_page(request):
    profile = Profile.objects.get(user=request.user)
    return render(request, "account/reputation.html", {"sharing": profile.share_gold_record})


@require_POST
@role_required(Role.REQUESTER)
def reputation_set(request):
    share = request.POST.get("share") == "1"
    profile_share_gold_record_set(user=request.user, share=share)
    messages.success(
        request,
        "Your workers' gold records now join the shared reputation."
        if share
        else "Your workers' gold records stay with you alone.",
    )
    return redirect("account-reputation")


urlpatterns = [
    path("account/reputation/", reputation_page, name="account-reputation"),
    path("account/reputation/set", reputation_set, name="account-reputation-set"),
]
