"""Pages for outside image pools, gallery enlargement (preview, then add), its verification campaign and the
coarse captions of a dataset. Requesters only; thin callers of the services."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_view
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.datasets.selectors.access import can_manage_dataset, datasets_visible_to
from annotator.finegrained.models.pools import ImagePool
from annotator.finegrained.selectors.access import can_manage_enlargement, enlargements_visible_to, pools_visible_to
from annotator.finegrained.selectors.coarse import coarse_captions
from annotator.finegrained.selectors.pools import enlargement_preview
from annotator.finegrained.services.pools.enlargement import enlargement_add, enlargement_request
from annotator.finegrained.services.pools.imports import pool_upload
from annotator.finegrained.services.pools.verification import enlargement_verification_create
from annotator.ranking.models.ranking import MachineAnnotator


def _managed_dataset(request, dataset_id: int):
    dataset = get_object_or_404(datasets_visible_to(request.user), pk=dataset_id)
    if not can_manage_dataset(request.user, dataset):
        raise PermissionDenied("Only the requester who owns this dataset can change its pools.")
    return dataset


@role_required(Role.REQUESTER)
@require_GET
def pool_list(request, dataset_id: int):
    dataset = get_object_or_404(datasets_visible_to(request.user), pk=dataset_id)
    pools = ImagePool.objects.filter(dataset=dataset).order_by("name")
    enlargements = enlargements_visible_to(request.user).filter(dataset=dataset).select_related("pool")
    annotators = MachineAnnotator.objects.filter(kind__in=["visual", "clip"]).order_by("name")
    return render(
        request,
        "pools/list.html",
        {"dataset": dataset, "pools": pools, "enlargements": enlargements, "annotators": annotators},
    )


@role_required(Role.REQUESTER)
@require_POST
def pool_upload_submit(request, dataset_id: int):
    dataset = _managed_dataset(request, dataset_id)
    pool = pool_upload(
        dataset=dataset, name=request.POST.get("name", ""), images=request.FILES.get("images"), user=request.user
    )
    messages.success(request, f"Pool {pool.name} is queued for import.")
    return redirect("pool-detail", pool.pk)


@role_required(Role.REQUESTER)
@require_GET
def pool_detail(request, pool_id: int):
    pool = get_object_or_404(pools_visible_to(request.user).select_related("dataset"), pk=pool_id)
    return render(
        request,
        "pools/detail.html",
        {
            "pool": pool,
            "job": job_view(pool),
            "report": pool.report or {},
            "images": pool.images.all()[:60],
            "may_manage": can_manage_dataset(request.user, pool.dataset),
            "annotators": MachineAnnotator.objects.filter(kind__in=["visual", "clip"]).order_by("name"),
        },
    )


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        if value in (None, ""):
            return default
        raise ApplicationError(f"{value!r} is not a whole number.") from exc


@role_required(Role.REQUESTER)
@require_POST
def pool_enlarge_submit(request, pool_id: int):
    pool = get_object_or_404(pools_visible_to(request.user), pk=pool_id)
    _managed_dataset(request, pool.dataset_id)
    enlargement = enlargement_request(
        pool=pool,
        user=request.user,
        image_annotator=request.POST.get("image_annotator", "visual"),
        caption_annotator=request.POST.get("caption_annotator", ""),
        k_image=_int(request.POST.get("k_image"), 20),
        k_caption=_int(request.POST.get("k_caption"), 20),
        keep=_int(request.POST.get("keep"), 9),
    )
    return redirect("enlargement-detail", enlargement.pk)


@role_required(Role.REQUESTER)
@require_GET
def enlargement_detail(request, enlargement_id: int):
    enlargement = get_object_or_404(
        enlargements_visible_to(request.user).select_related("pool", "dataset"), pk=enlargement_id
    )
    offset = max(_int(request.GET.get("offset"), 0), 0)
    return render(
        request,
        "pools/enlargement.html",
        {
            "enlargement": enlargement,
            "job": job_view(enlargement),
            "counts": enlargement.proposal.get("counts", {}),
            "preview": enlargement_preview(enlargement=enlargement, limit=30, offset=offset),
            "next_offset": offset + 30,
            "offset": offset,
            "may_manage": can_manage_enlargement(request.user, enlargement),
        },
    )


def _managed_enlargement(request, enlargement_id: int):
    enlargement = get_object_or_404(enlargements_visible_to(request.user), pk=enlargement_id)
    if not can_manage_enlargement(request.user, enlargement):
        raise PermissionDenied("Only the requester who owns this dataset can change it.")
    return enlargement


@role_required(Role.REQUESTER)
@require_POST
def enlargement_add_submit(request, enlargement_id: int):
    enlargement = enlargement_add(enlargement=_managed_enlargement(request, enlargement_id))
    messages.success(request, f"{enlargement.proposal.get('counts', {}).get('added', 0)} images joined the gallery.")
    return redirect("enlargement-detail", enlargement.pk)


@role_required(Role.REQUESTER)
@require_POST
def enlargement_verify_submit(request, enlargement_id: int):
    campaign = enlargement_verification_create(
        enlargement=_managed_enlargement(request, enlargement_id), owner=request.user
    )
    messages.success(request, "The verification campaign is a draft: build and launch it from its page.")
    return redirect("campaign-detail", campaign.pk)


@role_required(Role.REQUESTER)
@require_GET
def coarse_caption_list(request, dataset_id: int):
    dataset = get_object_or_404(datasets_visible_to(request.user), pk=dataset_id)
    rule = request.GET.get("rule", "majority")
    found = coarse_captions(dataset, rule=rule, within=max(_int(request.GET.get("within"), 1), 1))
    return render(
        request, "pools/coarse.html", {"dataset": dataset, "coarse": found[:200], "count": len(found), "rule": rule}
    )


urlpatterns = [
    path("datasets/<int:dataset_id>/pools/", pool_list, name="pool-list"),
    path("datasets/<int:dataset_id>/pools/upload/", pool_upload_submit, name="pool-upload"),
    path("datasets/<int:dataset_id>/coarse-captions/", coarse_caption_list, name="coarse-captions"),
    path("pools/<int:pool_id>/", pool_detail, name="pool-detail"),
    path("pools/<int:pool_id>/enlarge/", pool_enlarge_submit, name="pool-enlarge"),
    path("enlargements/<int:enlargement_id>/", enlargement_detail, name="enlargement-detail"),
    path("enlargements/<int:enlargement_id>/add/", enlargement_add_submit, name="enlargement-add"),
    path("enlargements/<int:enlargement_id>/verify/", enlargement_verify_submit, name="enlargement-verify"),
]
