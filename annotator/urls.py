"""The HTML side: each pipeline step (slice) keeps its own routes in its urls.py; no route shadows another's."""

from django.urls import include, path

urlpatterns = [
    # First: the crowd's requests are most of the traffic, and Django tries patterns in order.
    path("", include("annotator.crowd.urls")),
    path("", include("annotator.core.urls")),
    path("", include("annotator.datasets.urls")),
    path("", include("annotator.ranking.urls")),
    path("", include("annotator.campaigns.urls")),
    path("", include("annotator.quality.urls")),
    path("", include("annotator.labels.urls")),
    path("", include("annotator.research.urls")),
    path("", include("annotator.finegrained.urls")),
    path("", include("annotator.operations.urls")),
]
