import posixpath

from django.conf import settings
from django.contrib import admin
from django.http import Http404
from django.urls import include, path, re_path
from django.views.static import serve

from annotator.core.views.health import healthz

# An outage that escapes outside a view (a session saved while PostgreSQL is away) is a 503, not a 500.
handler500 = "annotator.core.resilience.middleware.server_error"

urlpatterns = [path("healthz", healthz, name="healthz")]
if settings.ADMIN_URL:  # empty: no admin at all (the production default)
    urlpatterns.append(path(settings.ADMIN_URL, admin.site.urls))
urlpatterns += [
    path("api/v1/", include("api.urls")),
    path("", include("annotator.urls")),
]

# What a browser may fetch from the media storage without logging in: the images and their thumbnails
# (HIT pages, previews). Everything else there (exports, uploads waiting for their import, embedding caches)
# is read only through views that check the caller's role.
PUBLIC_MEDIA_FOLDERS = ("images/", "thumbnails/")

if settings.STORAGES["default"]["BACKEND"].endswith("FileSystemStorage"):
    # Local-disk media (the embedded default). With S3 the storage hands out its own URLs.
    media_prefix = settings.MEDIA_URL.lstrip("/")

    def media(request, path):
        clean = posixpath.normpath(path)  # "images/../exports/x" is "exports/x"
        if not clean.startswith(PUBLIC_MEDIA_FOLDERS):
            raise Http404("No such file.")
        # MEDIA_ROOT is read per request (not captured at import) so tests that move it still serve files.
        return serve(request, clean, document_root=settings.MEDIA_ROOT)

    urlpatterns += [re_path(rf"^{media_prefix}(?P<path>.*)$", media)]
