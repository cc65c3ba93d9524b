"""Image pools, gallery enlargement and caption refinement: the routes of this slice's pages."""

from annotator.finegrained.views import pools, refinement

urlpatterns = [
    *pools.urlpatterns,
    *refinement.urlpatterns,
]
