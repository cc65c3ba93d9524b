from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.static import serve

from annotator.views.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("", include("annotator.urls")),
]

if settings.STORAGES["default"]["BACKEND"].endswith("FileSystemStorage"):
    # Local-disk media (the embedded default). With S3 the storage hands out its own URLs.
    media_prefix = settings.MEDIA_URL.lstrip("/")

    def media(request, path):
        # MEDIA_ROOT is read per request (not captured at import) so tests that move it still serve files.
        return serve(request, path, document_root=settings.MEDIA_ROOT)

    urlpatterns += [re_path(rf"^{media_prefix}(?P<path>.*)$", media)]
