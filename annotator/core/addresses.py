"""The client's address: the one rule every per-address limit and record uses.

The API throttles (api.throttles, api.authentication), the sign-up limit (annotator.crowd.views.signup), the
log-in lock-out (django-axes' AXES_CLIENT_IP_CALLABLE) and the audit events it writes all ask this module.

TRUSTED_PROXY_COUNT is how many reverse proxies in front of the server append the address they received a
request from to X-Forwarded-For. With 0 the client is the connecting address (REMOTE_ADDR) and the header
is ignored. With N the client is the N-th address from the right of X-Forwarded-For: the one our outermost
proxy saw. Whatever a client writes into the header itself stands further left and is never read, so a
client cannot choose its own address. A header with fewer than N addresses (a request that did not come
through every proxy) or a malformed entry gives REMOTE_ADDR.
"""

import ipaddress
from collections.abc import Mapping

from django.conf import settings


def _valid(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return None


def client_address_from_meta(meta: Mapping) -> str:
    """The client's address from a WSGI environ or request.META (see the module docstring)."""
    remote = meta.get("REMOTE_ADDR", "") or ""
    count = settings.TRUSTED_PROXY_COUNT
    if count <= 0:
        return remote
    forwarded = [part for part in (meta.get("HTTP_X_FORWARDED_FOR", "") or "").split(",") if part.strip()]
    if len(forwarded) < count:
        return remote
    return _valid(forwarded[-count]) or remote


def client_address(request) -> str:
    """The client's address of a Django or DRF request (see the module docstring)."""
    return client_address_from_meta(request.META)
