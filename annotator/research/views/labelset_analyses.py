"""What a researcher does with a label set: bring your own ranking and evaluate it against the set, launch a
campaign for its unjudged pairs, merge a campaign's labels in, compare sets (ECCV Caption Tables 2 and 3) and
the annotator bias of a crowd set. The set's own pages (list, make, detail, export) are the labels step's
(annotator/labels/views/labelsets.py)."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotator.analysis.metrics import METRIC_NAMES
from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.selectors.access import is_requester
from annotator.core.views.access import role_required
from annotator.labels.models.exports import ExportVariant
from annotator.labels.selectors.labels import campaign_get_readable
from annotator.labels.selectors.labelsets import labelset_get_readable, ranking_run_rankings
from annotator.labels.services.labelsets.readers import rankings_read
from annotator.ranking.models.ranking import RankingRun
from annotator.ranking.selectors.access import runs_visible_to
from annotator.research.selectors.labelset_analyses import (
    labelset_bias,
    labelset_compare,
    labelset_judged_at_k,
)
from annotator.research.services.labelset_evaluation import labelset_evaluate
from annotator.research.services.uploaded_rankings import (
    labelset_merge_campaign,
    labelset_unjudged_campaign,
    ranking_run_upload,
)

READERS = (Role.REQUESTER, Role.RESEARCHER)
METRIC_TITLES = {"r1": "R@1", "r5": "R@5", "r10": "R@10", "r_precision": "R-Precision", "map_at_r": "mAP@R"}


def _run_or_404(request, label_set, run_id) -> RankingRun:
    """A run on the set's dataset that the caller may see (annotator.ranking.selectors.access.runs_visible_to)."""
    runs = runs_visible_to(request.user).filter(dataset_id=label_set.dataset_id).select_related("annotator")
    run = runs.filter(pk=run_id).first()
    if run is None:
        raise Http404("No such ranking run on this set's dataset is yours.")
    return run


def _percent_bars(rows: list[dict], key: str) -> None:
    top = max((row[key] or 0 for row in rows), default=0)
    for row in rows:
        row[f"{key}_percent"] = round(100 * (row[key] or 0) / top) if top else 0


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
    from annotator.datasets.selectors.datasets import dataset_get_visible

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
    path("research/labelsets/compare/", labelset_compare_view, name="labelset-compare"),
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
