"""The researcher's label-set pages: list and make sets, one set with its counts and charts, compare sets
(ECCV Caption Tables 2 and 3), the annotator bias of a crowd set, and bring your own ranking."""

from django.contrib import messages
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotator.access import campaigns_visible_to, is_requester, label_sets_visible_to, runs_visible_to
from annotator.analysis.labelsets import multiplicity
from annotator.analysis.metrics import METRIC_NAMES
from annotator.errors import ApplicationError
from annotator.models import (
    AggregationMethod,
    ExportVariant,
    LabelSetFormat,
    LabelSetKind,
    LabelSetOperation,
    QueryRule,
    RankingRun,
    Role,
)
from annotator.selectors.labelset_analyses import labelset_bias, labelset_compare, labelset_judged_at_k
from annotator.selectors.labelsets import (
    labelset_dataset_usable,
    labelset_datasets_usable,
    labelset_get_readable,
    labelset_operands,
    labelset_view,
    ranking_run_rankings,
)
from annotator.selectors.research import campaign_get_readable
from annotator.services.labelsets.builds import labelset_derive, labelset_from_campaign, labelset_from_original
from annotator.services.labelsets.evaluation import labelset_evaluate
from annotator.services.labelsets.exports import export_file_name, labelset_export_chunks
from annotator.services.labelsets.imports import labelset_import
from annotator.services.labelsets.rankings import (
    labelset_merge_campaign,
    labelset_unjudged_campaign,
    ranking_run_upload,
)
from annotator.services.labelsets.readers import rankings_read
from annotator.views.access import role_required

READERS = (Role.REQUESTER, Role.RESEARCHER)
METRIC_TITLES = {"r1": "R@1", "r5": "R@5", "r10": "R@10", "r_precision": "R-Precision", "map_at_r": "mAP@R"}
HISTOGRAM_CAP = 20  # positives per query shown one by one; more go into one "more" bar


def _run_or_404(request, label_set, run_id) -> RankingRun:
    """A run on the set's dataset that the caller may see (annotator.access.runs_visible_to)."""
    runs = runs_visible_to(request.user).filter(dataset_id=label_set.dataset_id).select_related("annotator")
    run = runs.filter(pk=run_id).first()
    if run is None:
        raise Http404("No such ranking run on this set's dataset is yours.")
    return run


def _histogram(counts: dict) -> list[dict]:
    """Bars of a histogram {positives: queries}: one per count up to HISTOGRAM_CAP, then one for more."""
    bars: dict[str, int] = {}
    for positives, queries in sorted((int(k), v) for k, v in counts.items()):
        key = str(positives) if positives <= HISTOGRAM_CAP else f"> {HISTOGRAM_CAP}"
        bars[key] = bars.get(key, 0) + queries
    top = max(bars.values(), default=0)
    return [{"label": k, "count": v, "percent": round(100 * v / top) if top else 0} for k, v in bars.items()]


def _percent_bars(rows: list[dict], key: str) -> None:
    top = max((row[key] or 0 for row in rows), default=0)
    for row in rows:
        row[f"{key}_percent"] = round(100 * (row[key] or 0) / top) if top else 0


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


@role_required(*READERS)
@require_POST
def labelset_rankings_view(request, label_set_id: int):
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    upload = request.FILES.get("rankings")
    if upload is None:
        raise ApplicationError("Choose a rankings JSON file to upload.")
    try:
        top_k = int(request.POST.get("top_k") or 100)
    except ValueError:
        raise ApplicationError("top_k is a whole number.") from None
    run = ranking_run_upload(
        dataset=label_set.dataset,
        name=request.POST.get("model_name", ""),
        rankings=rankings_read(raw=upload.read()),
        user=request.user,
        top_k=top_k,
    )
    messages.success(request, f"Stored the rankings of {run.annotator.name} as run {run.pk}.")
    return redirect("labelset-run", label_set_id=label_set.pk, run_id=run.pk)


@role_required(*READERS)
@require_http_methods(["GET"])
def labelset_run(request, label_set_id: int, run_id: int):
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    run = _run_or_404(request, label_set, run_id)
    try:
        k = int(request.GET.get("k") or 10)
    except ValueError:
        raise ApplicationError("k is a whole number.") from None
    rankings = ranking_run_rankings(run=run)
    outcome = labelset_evaluate(label_set=label_set, rankings=rankings, model_name=run.annotator.name)
    judged = labelset_judged_at_k(label_set=label_set, rankings=rankings, k=k)
    rows = [
        {
            "direction": direction,
            "scores": [outcome["scores"][direction][name] for name in METRIC_NAMES],
            "counts": outcome["counts"][direction],
            "judged": judged.get(direction, {}),
        }
        for direction in outcome["scores"]
    ]
    context = {
        "label_set": label_set,
        "run": run,
        "k": k,
        "rows": rows,
        "metric_titles": [METRIC_TITLES[name] for name in METRIC_NAMES],
        "warnings": outcome["warnings"],
        "unjudged_total": sum(len(j.get("unjudged", [])) for j in judged.values()),
        "can_launch": is_requester(request.user),
    }
    return render(request, "research/labelsets/run.html", context)


@role_required(Role.REQUESTER)
@require_POST
def labelset_unjudged_view(request, label_set_id: int, run_id: int):
    from annotator.selectors.datasets import dataset_get_visible

    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    run = _run_or_404(request, label_set, run_id)
    dataset_get_visible(user=request.user, dataset_id=label_set.dataset_id)
    try:
        k = int(request.POST.get("k") or 10)
    except ValueError:
        raise ApplicationError("k is a whole number.") from None
    campaign = labelset_unjudged_campaign(
        label_set=label_set, run=run, k=k, owner=request.user, name=request.POST.get("name", "")
    )
    messages.success(request, f"Draft campaign {campaign.name!r} made; build and launch it from its page.")
    return redirect(reverse("campaign-detail", args=[campaign.pk]))


@role_required(*READERS)
@require_POST
def labelset_merge_view(request, label_set_id: int):
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    campaign = campaign_get_readable(user=request.user, campaign_id=request.POST.get("campaign"))
    merged = labelset_merge_campaign(
        label_set=label_set,
        campaign=campaign,
        user=request.user,
        method=request.POST.get("method") or None,
        variant=request.POST.get("variant", ExportVariant.LENIENT),
    )
    messages.success(request, f"Made {merged.label} with the labels of campaign {campaign.name}.")
    return redirect("labelset-detail", label_set_id=merged.pk)


@role_required(*READERS)
@require_http_methods(["GET"])
def labelset_compare_view(request):
    ids = request.GET.getlist("sets")
    if not ids:
        raise ApplicationError("Tick the label sets to compare.")
    sets = [labelset_get_readable(user=request.user, label_set_id=pk) for pk in dict.fromkeys(ids)]
    queries_of = request.GET.get("queries_of")
    queries_of = labelset_get_readable(user=request.user, label_set_id=queries_of) if queries_of else None
    result = labelset_compare(label_sets=sets, queries_of=queries_of)
    for direction in ("i2t", "t2i"):
        top = max((row[direction]["positives"] for row in result["multiplicity"]), default=0)
        for row in result["multiplicity"]:
            row[direction]["percent"] = round(100 * row[direction]["positives"] / top) if top else 0
    return render(request, "research/labelsets/compare.html", {"result": result, "sets": sets})


@role_required(*READERS)
@require_http_methods(["GET"])
def labelset_bias_view(request, label_set_id: int):
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    try:
        k = int(request.GET.get("k") or 5)
    except ValueError:
        raise ApplicationError("k is a whole number.") from None
    result = labelset_bias(label_set=label_set, k=k)
    annotators = [{"name": name, **values} for name, values in result["annotators"].items()]
    _percent_bars(annotators, "alone_share")
    subsets = []
    if result["bias"]:
        for entry in result["bias"]["subsets"]:
            subsets.append(
                {
                    "annotators": " + ".join(entry["annotators"]),
                    "size": entry["size"],
                    "metrics": [(METRIC_TITLES[m], entry[m]) for m in result["bias"]["metrics"]],
                }
            )
    context = {"label_set": label_set, "result": result, "annotators": annotators, "subsets": subsets, "k": k}
    return render(request, "research/labelsets/bias.html", context)


urlpatterns = [
    path("research/labelsets/", labelset_list, name="labelset-list"),
    path("research/labelsets/import", labelset_import_view, name="labelset-import"),
    path("research/labelsets/from-campaign", labelset_from_campaign_view, name="labelset-from-campaign"),
    path("research/labelsets/from-original", labelset_from_original_view, name="labelset-from-original"),
    path("research/labelsets/derive", labelset_derive_view, name="labelset-derive"),
    path("research/labelsets/compare/", labelset_compare_view, name="labelset-compare"),
    path("research/labelsets/<int:label_set_id>/", labelset_detail, name="labelset-detail"),
    path("research/labelsets/<int:label_set_id>/export", labelset_export_view, name="labelset-export"),
    path("research/labelsets/<int:label_set_id>/rankings", labelset_rankings_view, name="labelset-rankings"),
    path("research/labelsets/<int:label_set_id>/merge", labelset_merge_view, name="labelset-merge"),
    path("research/labelsets/<int:label_set_id>/bias/", labelset_bias_view, name="labelset-bias"),
    path("research/labelsets/<int:label_set_id>/runs/<int:run_id>/", labelset_run, name="labelset-run"),
    path(
        "research/labelsets/<int:label_set_id>/runs/<int:run_id>/campaign",
        labelset_unjudged_view,
        name="labelset-unjudged-campaign",
    ),
]
