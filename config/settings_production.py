"""Production: the same environment-driven settings, but refuse to start unsafe."""

from django.core.exceptions import ImproperlyConfigured

from config.settings import *  # noqa: F401,F403
from config.settings import DEBUG, DEVELOPMENT_SECRET_KEY, SECRET_KEY

if DEBUG:
    raise ImproperlyConfigured("Production refuses to start with DEBUG on: set DEBUG=false.")
if not SECRET_KEY or SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    raise ImproperlyConfigured("Production refuses to start without a SECRET_KEY in the environment.")

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
STORAGES["staticfiles"] = {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}  # noqa: F405
