from django.http import JsonResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from api import views

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

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    *router.urls,
]


@csrf_exempt  # it changes nothing; without this a POST to an unknown path gets Django's HTML CSRF page
def api_not_found(request, *args, **kwargs):
    """Unknown paths under /api/v1/ answer JSON like every other API error."""
    return JsonResponse({"error": f"There is no API endpoint at {request.path}."}, status=404)


urlpatterns.append(re_path(r"^.*$", api_not_found))
