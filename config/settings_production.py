"""Production: the same environment-driven settings, but refuse to start unsafe."""

from django.core.exceptions import ImproperlyConfigured

from config.settings import *  # noqa: F401,F403
from config.settings import DEBUG, DEVELOPMENT_SECRET_KEY, SECRET_KEY, env

if DEBUG:
    raise ImproperlyConfigured("Production refuses to start with DEBUG on: set DEBUG=false.")
if not SECRET_KEY or SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    raise ImproperlyConfigured("Production refuses to start without a SECRET_KEY in the environment.")

# No admin on the public URL space unless ADMIN_URL names a (preferably hard to guess) prefix.
ADMIN_URL = env.str("ADMIN_URL", default="").strip("/")
ADMIN_URL = f"{ADMIN_URL}/" if ADMIN_URL else ""

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
STORAGES["staticfiles"] = {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}  # noqa: F405
# https only: HSTS (a year by default), http redirected to https except the container's health check,
# which probes http://127.0.0.1:8000/healthz from inside.
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_HTTPONLY = True
