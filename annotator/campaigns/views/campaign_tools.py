"""The requester's tools around a campaign and a dataset: share with researchers, copy a campaign, delete a draft
campaign or a failed dataset (after a confirmation page).

Requester-only, and only on what the requester manages (annotator.campaigns.selectors.access): any other id is a
404. Every change is a POST with CSRF that calls a service.
"""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotator.campaigns.selectors.campaigns import campaign_get_managed
from annotator.campaigns.services.copying import campaign_clone
from annotator.campaigns.services.removal import campaign_delete
from annotator.campaigns.services.sharing import campaign_share
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.datasets.selectors.access import datasets_managed_by
from annotator.datasets.services.removal import dataset_delete


def _shared_names(campaign) -> list[str]:
    return list(campaign.shared_with.order_by("username").values_list("username", flat=True))


@require_POST
@role_required(Role.REQUESTER)
def campaign_sharing(request, campaign_id: int):
    """Add (`share`) or remove (`unshare`) one researcher by user name."""
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    names = _shared_names(campaign)
    if "unshare" in request.POST:
        name = request.POST["unshare"].strip()
        campaign_share(campaign=campaign, usernames=[n for n in names if n != name])
        messages.success(request, f"{name} no longer sees this campaign.")
    else:
        name = request.POST.get("username", "").strip()
        if not name:
            raise ApplicationError("Type the researcher's user name.")
        try:
            campaign_share(campaign=campaign, usernames=[*names, name])
        except ApplicationError as error:
            if error.extra.get("unknown"):
                raise ApplicationError(f"No researcher account is called {name!r}.") from None
            raise
        messages.success(request, f"Shared with {name}: they find it under Labels & evaluation.")
    return redirect(reverse("campaign-detail", kwargs={"campaign_id": campaign.pk}) + "#sharing")


@require_POST
@role_required(Role.REQUESTER)
def campaign_copy(request, campaign_id: int):
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    copy = campaign_clone(campaign=campaign, owner=request.user)
    messages.success(request, f"Copied as the draft {copy.name}. Change nothing or build it as it is.")
    return redirect("campaign-detail", campaign_id=copy.pk)


@require_http_methods(["GET", "POST"])
@role_required(Role.REQUESTER)
def campaign_remove(request, campaign_id: int):
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    if request.method == "POST":
        campaign_delete(campaign=campaign)
        messages.success(request, f"Deleted the draft {campaign.name}.")
        return redirect("campaign-list")
    return render(
        request,
        "partials/confirm_delete.html",
        {
            "what": f"the draft campaign {campaign.name}",
            "deletable": campaign.status == "draft",
            "cancel": reverse("campaign-detail", args=[campaign.pk]),
            "refusal": "Only a draft campaign can be deleted.",
        },
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.REQUESTER)
def dataset_remove(request, dataset_id: int):
    dataset = datasets_managed_by(request.user).filter(pk=dataset_id).first()
    if dataset is None:
        raise ApplicationError("No such dataset.", status=404)
    if request.method == "POST":
        dataset_delete(dataset=dataset)
        messages.success(request, f"Deleted the failed dataset {dataset.name}.")
        return redirect("dataset-list")
    return render(
        request,
        "partials/confirm_delete.html",
        {
            "what": f"the dataset {dataset.name}",
            "deletable": dataset.status == "failed",
            "cancel": reverse("dataset-detail", args=[dataset.pk]),
            "refusal": "Only a dataset whose import failed can be deleted.",
        },
    )


urlpatterns = [
    path("campaigns/<int:campaign_id>/sharing/", campaign_sharing, name="campaign-sharing"),
    path("campaigns/<int:campaign_id>/copy/", campaign_copy, name="campaign-copy"),
    path("campaigns/<int:campaign_id>/delete/", campaign_remove, name="campaign-delete"),
    path("datasets/<int:dataset_id>/delete/", dataset_remove, name="dataset-delete"),
]
