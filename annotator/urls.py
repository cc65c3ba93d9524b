"""The HTML side: each area of the product keeps its own routes in its views module."""

from annotator.views import (
    accounts,
    agreement,
    audit,
    campaigns,
    datasets,
    home,
    labelsets,
    leaderboard,
    operations,
    ranking,
    research,
    review,
    tokens,
    webhooks,
    work,
)

urlpatterns = [
    *home.urlpatterns,
    *accounts.urlpatterns,
    *audit.urlpatterns,
    *datasets.urlpatterns,
    *campaigns.urlpatterns,
    *work.urlpatterns,
    *review.urlpatterns,
    *agreement.urlpatterns,
    *research.urlpatterns,
    *labelsets.urlpatterns,
    *leaderboard.urlpatterns,
    *tokens.urlpatterns,
    *ranking.urlpatterns,
    *operations.urlpatterns,
    *webhooks.urlpatterns,
]
