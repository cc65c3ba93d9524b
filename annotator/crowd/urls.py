"""The crowd worker's pages (sign-up included) and the requester's money forms: the routes of this slice's pages."""

from annotator.crowd.views import money, preview, signup, work

urlpatterns = [
    *work.urlpatterns,
    *money.urlpatterns,
    *preview.urlpatterns,
    *signup.urlpatterns,
]
