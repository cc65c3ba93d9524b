"""Label sets and post-processing: the routes of this slice's pages."""

from annotator.labels.views import cleanup, labelsets

urlpatterns = [
    *cleanup.urlpatterns,
    *labelsets.urlpatterns,
]
