"""Research pages, what a researcher does with a label set, and the leaderboard: the routes of this slice's pages."""

from annotator.research.views import cxc_table5, labelset_analyses, leaderboard, research

urlpatterns = [
    *cxc_table5.urlpatterns,
    *labelset_analyses.urlpatterns,
    *leaderboard.urlpatterns,
    *research.urlpatterns,
]
