"""The operations page (is everything up, what is late, what the sweep did) and the audit log: the routes of this
slice's pages."""

from annotator.operations.views import audit, operations

urlpatterns = [
    *audit.urlpatterns,
    *operations.urlpatterns,
]
