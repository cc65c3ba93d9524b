"""Accounts, tokens, jobs and webhooks: the routes of this slice's pages."""

from annotator.core.views import accounts, home, jobs, people, tokens, webhooks

urlpatterns = [
    *accounts.urlpatterns,
    *home.urlpatterns,
    *jobs.urlpatterns,
    *people.urlpatterns,
    *tokens.urlpatterns,
    *webhooks.urlpatterns,
]
