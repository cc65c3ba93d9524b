"""Review, agreement and reputation: the routes of this slice's pages."""

from annotator.quality.views import agreement, reputation, review

urlpatterns = [
    *agreement.urlpatterns,
    *reputation.urlpatterns,
    *review.urlpatterns,
]
