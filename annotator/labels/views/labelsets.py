"""The researcher's label-set pages: list and make sets, one set with its counts and charts, its export. What a
researcher does with a set (bring your own ranking and evaluate it, compare sets, the annotator bias, merge a
campaign's labels in) runs research services, so those pages are the research step's
(annotator/research/views/labelset_analyses.py)."""

from django.contrib import messages
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from annotator.analysis.labelsets import multiplicity
from annotator.campaigns.selectors.access import campaigns_visible_to
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.labels.models.exports import ExportVariant
from annotator.labels.models.labels import AggregationMethod
from annotator.labels.models.labelsets import LabelSetFormat, LabelSetKind, LabelSetOperation, QueryRule
from annotator.labels.selectors.access import label_sets_visible_to
from annotator.labels.selectors.labels import campaign_get_readable
from annotator.labels.selectors.labelsets import (
    labelset_dataset_usable,
    labelset_datasets_usable,
    labelset_get_readable,
    labelset_operands,
    labelset_view,
)
from annotator.labels.services.labelsets.builds import (
    labelset_derive,
    labelset_from_campaign,
    labelset_from_original,
)
from annotator.labels.services.labelsets.exports import export_file_name, labelset_export_chunks
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.ranking.models.ranking import RankingRun

READERS = (Role.REQUESTER, Role.RESEARCHER)
HISTOGRAM_CAP = 20  # positives per query shown one by one; more go into one "more" bar


def _histogram(counts: dict) -> list[dict]:
    """Bars of a histogram {positives: queries}: one per count up to HISTOGRAM_CAP, then one for more."""
    bars: dict[str, int] = {}
    for positives, queries in sorted((int(k), v) for k, v in counts.items()):
        key = str(positives) if positives <= HISTOGRAM_CAP else f"> {HISTOGRAM_CAP}"
        bars[key] = bars.get(key, 0) + queries
    top = max(bars.values(), default=0)
    return [{"label": k, "count": v, "percent": round(100 * v / top) if top else 0} for k, v in bars.items()]


@role_required(*READERS)
@require_http_methods(["GET"])
def labelset_list(request):
    sets = label_sets_visible_to(request.user).order_by("dataset__name", "name", "-version")
    context = {
        "sets": sets,
        "datasets": labelset_datasets_usable(user=request.user).order_by("name"),
        "campaigns": campaigns_visible_to(request.user).order_by("-created_at")[:100],
        "formats": LabelSetFormat.choices,
        "operations": LabelSetOperation.choices,
        "query_rules": QueryRule.choices,
        "variants": ExportVariant.choices,
        "methods": AggregationMethod.choices,
    }
    return render(request, "research/labelsets/list.html", context)


@role_required(*READERS)
@require_POST
def labelset_import_view(request):
    dataset = labelset_dataset_usable(user=request.user, dataset_id=request.POST.get("dataset"))
    uploads = request.FILES.getlist("files")
    threshold = request.POST.get("threshold", "").strip()
    try:
        threshold = float(threshold) if threshold else None
    except ValueError:
        raise ApplicationError("The threshold is a number from 0 to 5.") from None
    label_set = labelset_import(
        dataset=dataset,
        name=request.POST.get("name", ""),
        files=[(upload.name, upload.read()) for upload in uploads],
        fmt=request.POST.get("format") or None,
        threshold=threshold,
        user=request.user,
        description=request.POST.get("description", ""),
        annotators=request.POST.get("annotators", "").split(","),
        public=request.POST.get("public") == "on",
    )
    messages.success(request, f"Imported {label_set.label}.")
    return redirect("labelset-detail", label_set_id=label_set.pk)


@role_required(*READERS)
@require_POST
def labelset_from_campaign_view(request):
    campaign = campaign_get_readable(user=request.user, campaign_id=request.POST.get("campaign"))
    label_set = labelset_from_campaign(
        campaign=campaign,
        user=request.user,
        method=request.POST.get("method") or None,
        variant=request.POST.get("variant", ExportVariant.LENIENT),
        name=request.POST.get("name") or None,
        public=request.POST.get("public") == "on",
    )
    messages.success(request, f"Made {label_set.label} from campaign {campaign.name}.")
    return redirect("labelset-detail", label_set_id=label_set.pk)


@role_required(*READERS)
@require_POST
def labelset_from_original_view(request):
    dataset = labelset_dataset_usable(user=request.user, dataset_id=request.POST.get("dataset"))
    label_set = labelset_from_original(
        dataset=dataset,
        user=request.user,
        name=request.POST.get("name") or "original",
        public=request.POST.get("public") == "on",
    )
    messages.success(request, f"Made {label_set.label} from the original pairs of {dataset.name}.")
    return redirect("labelset-detail", label_set_id=label_set.pk)


@role_required(*READERS)
@require_POST
def labelset_derive_view(request):
    operands = [labelset_get_readable(user=request.user, label_set_id=pk) for pk in request.POST.getlist("operands")]
    label_set = labelset_derive(
        operands=operands,
        operation=request.POST.get("operation", ""),
        name=request.POST.get("name", ""),
        query_rule=request.POST.get("query_rule") or None,
        user=request.user,
        description=request.POST.get("description", ""),
        public=request.POST.get("public") == "on",
    )
    messages.success(request, f"Made {label_set.label}.")
    return redirect("labelset-detail", label_set_id=label_set.pk)


@role_required(*READERS)
@require_http_methods(["GET"])
def labelset_detail(request, label_set_id: int):
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    view = labelset_view(label_set=label_set)
    directions = []
    for direction in view.directions():
        counts = multiplicity(view, direction)
        directions.append(
            {
                "direction": direction,
                "stats": label_set.stats.get(direction, {}),
                "mean": counts["mean"],
                "max": counts["max"],
                "histogram": _histogram(counts["histogram"]),
            }
        )
    versions = label_sets_visible_to(request.user).filter(dataset=label_set.dataset, name=label_set.name)
    runs = RankingRun.objects.filter(dataset_id=label_set.dataset_id, stage="uploaded", created_by=request.user)
    context = {
        "label_set": label_set,
        "directions": directions,
        "operands": labelset_operands(label_set=label_set) if label_set.kind == LabelSetKind.DERIVED else [],
        "versions": versions.order_by("-version"),
        "others": label_sets_visible_to(request.user).filter(dataset=label_set.dataset).exclude(pk=label_set.pk),
        "runs": runs.select_related("annotator").order_by("-created_at")[:20],
        "campaigns": campaigns_visible_to(request.user).filter(dataset=label_set.dataset).order_by("-created_at"),
        "variants": ExportVariant.choices,
        "methods": AggregationMethod.choices,
        "is_crowd": label_set.kind == LabelSetKind.CROWD,
    }
    return render(request, "research/labelsets/detail.html", context)


@role_required(*READERS)
@require_http_methods(["GET"])
def labelset_export_view(request, label_set_id: int):
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    fmt = request.GET.get("format", "eccv_json")
    direction = request.GET.get("direction") or None
    chunks = labelset_export_chunks(label_set=label_set, fmt=fmt, direction=direction)
    response = StreamingHttpResponse(chunks, content_type="text/csv" if fmt == "csv" else "application/json")
    response["Content-Disposition"] = (
        f'attachment; filename="{export_file_name(label_set=label_set, fmt=fmt, direction=direction)}"'
    )
    return response


urlpatterns = [
    path("research/labelsets/", labelset_list, name="labelset-list"),
    path("research/labelsets/import", labelset_import_view, name="labelset-import"),
    path("research/labelsets/from-campaign", labelset_from_campaign_view, name="labelset-from-campaign"),
    path("research/labelsets/from-original", labelset_from_original_view, name="labelset-from-original"),
    path("research/labelsets/derive", labelset_derive_view, name="labelset-derive"),
    path("research/labelsets/<int:label_set_id>/", labelset_detail, name="labelset-detail"),
    path("research/labelsets/<int:label_set_id>/export", labelset_export_view, name="labelset-export"),
]
