"""The HTML side: each area of the product keeps its own routes in its views module."""

from annotator.views import (
    accounts,
    agreement,
    audit,
    campaign_tools,
    campaigns,
    datasets,
    home,
    jobs,
    labelsets,
    leaderboard,
    money,
    operations,
    people,
    pools,
    ranking,
    refinement,
    reputation,
    research,
    review,
    tokens,
    webhooks,
    work,
)

urlpatterns = [
    # First: the crowd's requests are most of the traffic, and Django tries patterns in order (every path
    # here is under work/ or mturk/, so none shadows another area's).
    *work.urlpatterns,
    *home.urlpatterns,
    *accounts.urlpatterns,
    *audit.urlpatterns,
    *datasets.urlpatterns,
    *pools.urlpatterns,
    *campaign_tools.urlpatterns,  # before campaigns: its <action> route would take these paths
    *campaigns.urlpatterns,
    *review.urlpatterns,
    *money.urlpatterns,
    *agreement.urlpatterns,
    *research.urlpatterns,
    *labelsets.urlpatterns,
    *leaderboard.urlpatterns,
    *tokens.urlpatterns,
    *reputation.urlpatterns,
    *ranking.urlpatterns,
    *operations.urlpatterns,
    *jobs.urlpatterns,
    *webhooks.urlpatterns,
    *people.urlpatterns,
    *refinement.urlpatterns,
]
