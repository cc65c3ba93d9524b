"""The HTML side: each area of the product keeps its own routes in its views module."""

from annotator.views import accounts, campaigns, datasets, home, ranking, research, review, tokens, work

urlpatterns = [
    *home.urlpatterns,
    *accounts.urlpatterns,
    *datasets.urlpatterns,
    *campaigns.urlpatterns,
    *work.urlpatterns,
    *review.urlpatterns,
    *research.urlpatterns,
    *tokens.urlpatterns,
    *ranking.urlpatterns,
]
