"""Machine annotators and ranking runs: the routes of this slice's pages."""

from annotator.ranking.views import ranking

urlpatterns = [
    *ranking.urlpatterns,
]
