"""Campaigns and their tools: the routes of this slice's pages."""

from annotator.campaigns.views import campaign_tools, campaigns

urlpatterns = [
    *campaign_tools.urlpatterns,
    *campaigns.urlpatterns,
]
