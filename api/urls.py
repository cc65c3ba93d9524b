from csp.decorators import csp_update
from django.http import JsonResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from api import views
from api.accounts import AccountCreateView
from api.cxc_table5 import CxcTable5View
from api.labelsets import LabelSetViewSet
from api.leaderboard import LeaderboardView
from api.pools import CoarseCaptionsView, EnlargementViewSet, ImagePoolViewSet
from api.refinement import BenchmarkViewSet
from api.webhooks import WebhookDeliveryViewSet, WebhookEndpointViewSet

router = DefaultRouter()
router.register("datasets", views.DatasetViewSet, basename="api-dataset")
router.register("annotators", views.MachineAnnotatorViewSet, basename="api-annotator")
router.register("runs", views.RankingRunViewSet, basename="api-run")
router.register("campaigns", views.CampaignViewSet, basename="api-campaign")
router.register("assignments", views.AssignmentViewSet, basename="api-assignment")
router.register("workers", views.WorkerViewSet, basename="api-worker")
router.register("labels", views.LabelViewSet, basename="api-label")
router.register("exports", views.ExportJobViewSet, basename="api-export")
router.register("evaluations", views.EvaluationViewSet, basename="api-evaluation")
router.register("labelsets", LabelSetViewSet, basename="api-labelset")
router.register("benchmarks", BenchmarkViewSet, basename="api-benchmark")
router.register("webhooks", WebhookEndpointViewSet, basename="api-webhook")
router.register("pools", ImagePoolViewSet, basename="api-pool")
router.register("enlargements", EnlargementViewSet, basename="api-enlargement")
router.register("webhook-deliveries", WebhookDeliveryViewSet, basename="api-webhook-delivery")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The API docs are third-party pages with inline <style> (and Redoc's inline start-up script); they show
    # no user content, so only they get 'unsafe-inline'. Swagger's start-up script is served as a file.
    path(
        "docs/",
        csp_update({"style-src": ["'unsafe-inline'"], "worker-src": ["blob:"]})(
            SpectacularSwaggerSplitView.as_view(url_name="api-schema")
        ),
        name="api-docs",
    ),
    path(
        "redoc/",
        csp_update({"style-src": ["'unsafe-inline'"], "script-src": ["'unsafe-inline'"], "worker-src": ["blob:"]})(
            SpectacularRedocView.as_view(url_name="api-schema")
        ),
        name="api-redoc",
    ),
    path("leaderboard/", LeaderboardView.as_view(), name="api-leaderboard"),
    path("accounts/", AccountCreateView.as_view(), name="api-accounts"),
    path("labelsets/<int:label_set_id>/cxc-table5/", CxcTable5View.as_view(), name="api-labelset-cxc-table5"),
    path("datasets/<int:dataset_id>/coarse-captions/", CoarseCaptionsView.as_view(), name="api-coarse-captions"),
    *router.urls,
]


@csrf_exempt  # it changes nothing; without this a POST to an unknown path gets Django's HTML CSRF page
def api_not_found(request, *args, **kwargs):
    """Unknown paths under /api/v1/ answer JSON like every other API error."""
    return JsonResponse({"error": f"There is no API endpoint at {request.path}."}, status=404)


urlpatterns.append(re_path(r"^[\s\S]*$", api_not_found))  # [\s\S]: a path with a newline is answered too
