"""The researcher's leaderboard: many models' evaluations on one set of labels, side by side.

A board is of a label set (/research/leaderboard/labelset/<id>/) or of a campaign's labels of one
aggregation method and variant (/research/leaderboard/<campaign>/?method=&variant=). Sorting is a link per
column (no script), so the page works from the keyboard and without JavaScript; the chart is server-drawn
SVG; the same board downloads as CSV and JSON.
"""

import json

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotator.core.errors import ApplicationError
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.labels.models.exports import ExportVariant
from annotator.labels.models.labels import AggregationMethod
from annotator.labels.selectors.labels import campaign_get_readable, label_method_resolve
from annotator.labels.selectors.labelsets import labelset_get_readable
from annotator.labels.services.labelsets.readers import rankings_read
from annotator.ranking.models.ranking import RankingRun, RunStatus
from annotator.ranking.selectors.access import runs_visible_to
from annotator.research.selectors.access import evaluations_visible_to
from annotator.research.selectors.leaderboard import (
    evaluations_csv,
    leaderboard,
    leaderboard_evaluations,
    leaderboard_json,
    leaderboard_targets,
)
from annotator.research.services.scorecards import evaluation_request

READERS = (Role.REQUESTER, Role.RESEARCHER)
FORMATS = ("csv", "json")


def _tau_class(value) -> str:
    if value is None:
        return "tau-none"
    return "tau-high" if value >= 0.8 else "tau-mid" if value >= 0.5 else "tau-low"


def _target(request, campaign_id: int | None, label_set_id: int | None) -> dict:
    """The labels a board is of, from the URL: {"campaign", "method", "variant"} or {"label_set"}."""
    if label_set_id is not None:
        return {"label_set": labelset_get_readable(user=request.user, label_set_id=label_set_id)}
    campaign = campaign_get_readable(user=request.user, campaign_id=campaign_id)
    method = request.GET.get("method") or label_method_resolve(campaign=campaign, method=None)
    if method not in AggregationMethod.values:
        raise ApplicationError(f"Unknown aggregation method {method!r}.")
    return {"campaign": campaign, "method": method, "variant": request.GET.get("variant") or ExportVariant.LENIENT}


def _board(request, campaign_id: int | None = None, label_set_id: int | None = None) -> dict:
    order = request.GET.get("order")
    result = leaderboard(
        user=request.user,
        direction=request.GET.get("direction") or "i2t",
        sort=request.GET.get("sort") or None,
        descending=None if order not in ("asc", "desc") else order == "desc",
        **_target(request, campaign_id, label_set_id),
    )
    if label_set_id is not None:
        result["url"] = reverse("research-leaderboard-labelset", args=[label_set_id])
        result["download"] = reverse("research-leaderboard-labelset-download", args=[label_set_id, "x"])[:-1]
    else:
        result["url"] = reverse("research-leaderboard", args=[campaign_id])
        result["download"] = reverse("research-leaderboard-download", args=[campaign_id, "x"])[:-1]
    return result


@role_required(*READERS)
@require_http_methods(["GET"])
def research_leaderboards(request):
    return render(request, "research/leaderboards.html", {"targets": leaderboard_targets(user=request.user)})


def _render_board(request, result: dict):
    for column in result["columns"]:
        # The sorted column's link reverses it; any other column's link sorts it best first.
        current = "desc" if result["descending"] else "asc"
        if result["sort"] == column["key"]:
            column["order"] = "asc" if current == "desc" else "desc"
            column["aria_sort"] = "descending" if result["descending"] else "ascending"
        else:
            column["order"] = "desc" if column["higher_is_better"] else "asc"
            column["aria_sort"] = ""
    for row in result["rows"]:
        row["pairs"] = list(zip(result["columns"], row["cells"], strict=True))
    for row in result["tau"]:
        row["pairs"] = [(value, _tau_class(value)) for value in row["values"]]
    if result["stability"]:
        result["stability"]["rows"] = [
            {"target": target, "pairs": [(value, _tau_class(value)) for value in values]}
            for target, values in zip(result["stability"]["targets"], result["stability"]["tau"], strict=True)
        ]
    label_set = result["label_set"]
    context = {
        "board": result,
        "methods": AggregationMethod.choices,
        "variants": ExportVariant.choices,
        "directions": result["directions"] or ([result["direction"]]),
        "query": request.GET.urlencode(),
        "runs": runs_visible_to(request.user)
        .filter(dataset=label_set.dataset, status=RunStatus.SUCCEEDED)
        .select_related("annotator")
        .order_by("-id")
        if label_set is not None
        else [],
    }
    return render(request, "research/leaderboard.html", context)


@role_required(*READERS)
@require_http_methods(["GET"])
def research_leaderboard(request, campaign_id: int):
    return _render_board(request, _board(request, campaign_id=campaign_id))


@role_required(*READERS)
@require_http_methods(["GET"])
def research_leaderboard_labelset(request, label_set_id: int):
    return _render_board(request, _board(request, label_set_id=label_set_id))


def _download(request, fmt: str, campaign_id: int | None = None, label_set_id: int | None = None):
    if fmt not in FORMATS:
        raise Http404("Downloads are .csv or .json.")
    result = _board(request, campaign_id=campaign_id, label_set_id=label_set_id)
    if result["label_set"] is not None:
        stem = f"leaderboard-labelset-{result['label_set'].pk}"
    else:
        stem = f"leaderboard-campaign-{result['campaign'].pk}-{result['method']}-{result['variant']}"
    if fmt == "json":
        response = JsonResponse(leaderboard_json(result), json_dumps_params={"indent": 1})
        response["Content-Disposition"] = f'attachment; filename="{stem}-{result["direction"]}.json"'
        return response
    evaluations = leaderboard_evaluations(
        user=request.user,
        campaign=result["campaign"],
        label_set=result["label_set"],
        method=result["method"],
        variant=result["variant"],
    )
    response = HttpResponse(evaluations_csv(evaluations), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{stem}.csv"'
    return response


@role_required(*READERS)
@require_http_methods(["GET"])
def research_leaderboard_download(request, campaign_id: int, fmt: str):
    return _download(request, fmt, campaign_id=campaign_id)


@role_required(*READERS)
@require_http_methods(["GET"])
def research_leaderboard_labelset_download(request, label_set_id: int, fmt: str):
    return _download(request, fmt, label_set_id=label_set_id)


@role_required(*READERS)
@require_http_methods(["GET"])
def research_evaluation_download(request, evaluation_id: int, fmt: str):
    if fmt not in FORMATS:
        raise Http404("Downloads are .csv or .json.")
    evaluation = evaluations_visible_to(request.user).filter(pk=evaluation_id).first()
    if evaluation is None:
        raise Http404("No evaluation with this number is shared with you.")
    stem = f"evaluation-{evaluation.pk}"
    if fmt == "json":
        body = {
            "id": evaluation.pk,
            "name": evaluation.name,
            "campaign": evaluation.campaign_id,
            "label_set": evaluation.label_set_id,
            "method": evaluation.method,
            "variant": evaluation.variant,
            "status": evaluation.status,
            "biased": evaluation.biased,
            "ranking_run": evaluation.ranking_run_id,
            "rankings_sha256": evaluation.rankings_sha256,
            "key": evaluation.key,
            "settings": evaluation.settings,
            "results": evaluation.results,
        }
        response = HttpResponse(json.dumps(body, indent=1), content_type="application/json")
    else:
        response = HttpResponse(evaluations_csv([evaluation]), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{stem}.{fmt}"'
    return response


def _finished_run(request, dataset_id: int) -> RankingRun:
    run = (
        runs_visible_to(request.user)
        .filter(pk=request.POST.get("run") or 0, dataset_id=dataset_id, status=RunStatus.SUCCEEDED)
        .first()
    )
    if run is None:
        raise ApplicationError("Choose a finished ranking run of the labels' dataset.")
    return run


def _announce(request, evaluation, created: bool) -> None:
    if created:
        messages.success(request, f"Evaluating {evaluation.name}; it joins the leaderboard when scored.")
    else:
        messages.info(request, f"{evaluation.name} was evaluated on these labels already (evaluation {evaluation.pk}).")


@role_required(*READERS)
@require_POST
def research_evaluate_run(request, campaign_id: int):
    """Evaluate one of the dataset's finished ranking runs (a machine annotator) against a campaign's labels."""
    campaign = campaign_get_readable(user=request.user, campaign_id=campaign_id)
    run = _finished_run(request, campaign.dataset_id)
    evaluation, created = evaluation_request(
        campaign=campaign,
        user=request.user,
        name=request.POST.get("name") or run.annotator.name,
        ranking_run=run,
        method=request.POST.get("method") or None,
        variant=request.POST.get("variant", ExportVariant.LENIENT),
    )
    _announce(request, evaluation, created)
    return redirect(f"/research/campaigns/{campaign.pk}/#evaluations")


@role_required(*READERS)
@require_POST
def research_evaluate_labelset(request, label_set_id: int):
    """Evaluate uploaded rankings, or a finished ranking run, against a label set; back to its board."""
    label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
    upload = request.FILES.get("rankings")
    if upload is not None:
        rankings = rankings_read(raw=upload.read())
        evaluation, created = evaluation_request(
            label_set=label_set, user=request.user, name=request.POST.get("name", ""), rankings=rankings
        )
    elif request.POST.get("run"):
        run = _finished_run(request, label_set.dataset_id)
        evaluation, created = evaluation_request(
            label_set=label_set, user=request.user, name=request.POST.get("name") or run.annotator.name, ranking_run=run
        )
    else:
        raise ApplicationError("Upload a rankings JSON file or choose a ranking run.")
    _announce(request, evaluation, created)
    return redirect("research-leaderboard-labelset", label_set_id=label_set.pk)


urlpatterns = [
    path("research/leaderboard/", research_leaderboards, name="research-leaderboards"),
    path("research/leaderboard/<int:campaign_id>/", research_leaderboard, name="research-leaderboard"),
    path(
        "research/leaderboard/<int:campaign_id>/download.<str:fmt>",
        research_leaderboard_download,
        name="research-leaderboard-download",
    ),
    path(
        "research/leaderboard/labelset/<int:label_set_id>/",
        research_leaderboard_labelset,
        name="research-leaderboard-labelset",
    ),
    path(
        "research/leaderboard/labelset/<int:label_set_id>/download.<str:fmt>",
        research_leaderboard_labelset_download,
        name="research-leaderboard-labelset-download",
    ),
    path(
        "research/leaderboard/labelset/<int:label_set_id>/evaluate",
        research_evaluate_labelset,
        name="research-evaluate-labelset",
    ),
    path(
        "research/evaluations/<int:evaluation_id>/download.<str:fmt>",
        research_evaluation_download,
        name="research-evaluation-download",
    ),
    path("research/campaigns/<int:campaign_id>/evaluate-run", research_evaluate_run, name="research-evaluate-run"),
]
