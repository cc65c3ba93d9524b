"""The researcher's pages: campaigns shared with me, label counts, exports to download, model evaluation."""

from django.contrib import messages
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from annotator.analysis.scorecard import IMAGE_TEXT
from annotator.campaigns.models.campaign import Scale
from annotator.campaigns.selectors.access import campaigns_visible_to
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_view
from annotator.core.models.accounts import Role
from annotator.core.views.access import role_required
from annotator.labels.models.exports import ExportFormat, ExportStatus, ExportVariant
from annotator.labels.models.labels import AggregationMethod
from annotator.labels.selectors.access import exports_visible_to
from annotator.labels.selectors.labels import campaign_get_readable, label_counts
from annotator.labels.services.exports.jobs import export_create, export_file_name
from annotator.labels.services.labelsets.readers import rankings_read
from annotator.ranking.models.ranking import RankingRun, RunStatus
from annotator.research.selectors.access import evaluations_visible_to
from annotator.research.selectors.research_home import campaign_label_summary
from annotator.research.services.evaluation import quick_coverage_warnings
from annotator.research.services.scorecards import evaluation_create

READERS = (Role.REQUESTER, Role.RESEARCHER)
METRIC_COLUMNS = [("r1", "R@1"), ("r5", "R@5"), ("r10", "R@10"), ("r_precision", "R-Precision"), ("map_at_r", "mAP@R")]


@role_required(*READERS)
@require_http_methods(["GET"])
def research_home(request):
    campaigns = list(campaigns_visible_to(request.user).select_related("dataset", "owner").order_by("-created_at"))
    rows = [(campaign, campaign_label_summary(campaign=campaign)) for campaign in campaigns]
    return render(request, "research/home.html", {"campaigns": rows})


@role_required(*READERS)
@require_http_methods(["GET"])
def research_campaign(request, campaign_id: int):
    campaign = campaign_get_readable(user=request.user, campaign_id=campaign_id)
    return _campaign_page(request, campaign)


def _campaign_page(request, campaign, *, export_error: str = "", status: int = 200):
    """The campaign's research page; `export_error` is shown at the export form (a 400 re-shows the page)."""
    exports = exports_visible_to(request.user).filter(campaign=campaign).order_by("-id")[:20]
    evaluations = evaluations_visible_to(request.user).filter(campaign=campaign).order_by("-id")[:20]
    rows = []
    for evaluation in evaluations:
        results = evaluation.results or {}
        for direction in ("i2t", "t2i"):
            verified = results.get("verified", {}).get(direction, {})
            original = results.get("original", {}).get(direction, {})
            counts = results.get("counts", {}).get(direction, {})
            rows.append(
                {
                    "evaluation": evaluation,
                    "direction": direction,
                    "verified": [verified.get(key) for key, _ in METRIC_COLUMNS],
                    "original": [original.get(key) for key in ("r1", "r5", "r10")],
                    "queries": counts.get("queries", 0),
                    "missing": counts.get("missing_rankings", 0),
                }
            )
    context = {
        "campaign": campaign,
        "counts": label_counts(campaign=campaign),
        "exports": [(job, job_view(job)) for job in exports],
        "evaluation_rows": rows,
        "metric_columns": METRIC_COLUMNS,
        # The CxC file holds 0-5 ratings: offered for similarity campaigns only.
        "formats": [
            (value, text)
            for value, text in ExportFormat.choices
            if value != ExportFormat.CXC_CSV or campaign.scale == Scale.SIMILARITY
        ],
        "export_error": export_error,
        "variants": ExportVariant.choices,
        "methods": AggregationMethod.choices,
        "runs": RankingRun.objects.filter(dataset_id=campaign.dataset_id, status=RunStatus.SUCCEEDED)
        .select_related("annotator")
        .order_by("-id"),
    }
    return render(request, "research/campaign.html", context, status=status)


@role_required(*READERS)
@require_POST
def research_export(request, campaign_id: int):
    campaign = campaign_get_readable(user=request.user, campaign_id=campaign_id)
    try:
        job = export_create(
            campaign=campaign,
            user=request.user,
            format=request.POST.get("format", ""),
            variant=request.POST.get("variant", ExportVariant.LENIENT),
            method=request.POST.get("method") or None,
            merge_original=request.POST.get("merge_original") == "on",
        )
    except ApplicationError as error:
        if error.status != 400:
            raise
        return _campaign_page(request, campaign, export_error=error.message, status=400)
    messages.success(request, f"Export {job.pk} started; it is listed below with its status.")
    return redirect("research-campaign", campaign_id=campaign.pk)


@role_required(*READERS)
@require_POST
def research_evaluate(request, campaign_id: int):
    campaign = campaign_get_readable(user=request.user, campaign_id=campaign_id)
    upload = request.FILES.get("rankings")
    if upload is None:
        raise ApplicationError("Choose a rankings JSON file to upload.")
    rankings = rankings_read(raw=upload.read(), directions=IMAGE_TEXT)
    evaluation = evaluation_create(
        campaign=campaign,
        user=request.user,
        name=request.POST.get("name", ""),
        rankings=rankings,
        method=request.POST.get("method") or None,
        variant=request.POST.get("variant", ExportVariant.LENIENT),
    )
    messages.success(request, f"Evaluated {evaluation.name}; its scores are in the table.")
    for warning in quick_coverage_warnings(counts=(evaluation.results or {}).get("counts") or {}):
        messages.warning(request, warning)
    return redirect(f"/research/campaigns/{campaign.pk}/#evaluations")


@role_required(*READERS)
@require_http_methods(["GET"])
def research_download(request, export_id: int):
    job = exports_visible_to(request.user).filter(pk=export_id).first()
    if job is None or job.status != ExportStatus.SUCCEEDED or not job.file:
        raise Http404("No finished export with this number is shared with you.")
    return FileResponse(job.file.open("rb"), as_attachment=True, filename=export_file_name(job))


urlpatterns = [
    path("research/", research_home, name="research-home"),
    path("research/campaigns/<int:campaign_id>/", research_campaign, name="research-campaign"),
    path("research/campaigns/<int:campaign_id>/export", research_export, name="research-export"),
    path("research/campaigns/<int:campaign_id>/evaluate", research_evaluate, name="research-evaluate"),
    path("research/exports/<int:export_id>/download", research_download, name="research-download"),
]
